// agentnb RunView: the browser half of agentnb.widgets.RunView (an anywidget ES module).
//
// Shared helpers (h, button, clock, safeClass, viewId, the drawing, renderTree, viz.js once
// per page) come from live.js, and the event log and streamed rows from run_log.js, which
// agentnb.widgets._live.static_text puts before this file; live.js's rules hold here too
// (user data as text only, the drawing lit by classes).
//
// The event log is virtual: the kernel says how many rows there are (in all and per type)
// and sends the newest; this view asks for the rows it scrolls to ("rows" messages) and
// keeps a bounded cache of them. Only the rows in view are in the DOM, at a fixed height,
// repainted at most once per animation frame — a run of 100,000 events costs a dozen rows.
// What a running node emits (ctx.emit) arrives as "tokens" batches, appended per frame.

const HISTORY_DEBOUNCE_MS = 120;

// -- the view ----------------------------------------------------------------------------

function render({ model, el }) {
  const id = viewId();
  const born = performance.now();  // for data-first-paint-ms (bench/bench_widget.py)
  const root = h("div", "agentnb-rv");
  el.append(root);

  // header
  const { head, title, badge, where, errorBox, noticeBox } = panelHeader("rv", "status");

  // toolbar
  const bar = h("div", "rv-toolbar");
  const stepBtn = button("Step", "rv-btn rv-step", "Run one node (or stop at an approval)");
  const runBtn = button("Run", "rv-btn rv-run", "Run to the next approval or the end");
  const stopBtn = button("Stop", "rv-btn rv-stop", "Cancel the drive in progress (the run can be continued)");
  const histLabel = h("label", "rv-history");
  const slider = h("input", "rv-slider");
  slider.type = "range"; slider.min = "0"; slider.step = "1";
  slider.setAttribute("aria-label", "history: state after step");
  const histText = h("span", "rv-history-text");
  const liveBtn = button("Live", "rv-btn rv-live", "Back to the live run");
  histLabel.append(h("span", null, "History "), slider, histText);
  bar.append(stepBtn, runBtn, stopBtn, histLabel, liveBtn);

  // main: drawing | approval + state
  const main = h("div", "rv-main");
  const drawingBox = h("div", "rv-diagram");
  const side = h("div", "rv-side");
  const approval = h("section", "rv-approval");
  const approvalHead = h("div", "rv-approval-head");
  const approvalState = h("pre", "rv-approval-state");
  const digestLine = h("div", "rv-digest");
  const form = h("div", "rv-form");
  const approverIn = h("input", "rv-approver");
  approverIn.placeholder = "approver name"; approverIn.setAttribute("aria-label", "approver name");
  const commentIn = h("input", "rv-comment");
  commentIn.placeholder = "comment (optional)"; commentIn.setAttribute("aria-label", "comment");
  const approveBtn = button("Approve", "rv-btn rv-approve", "Approve exactly the state shown");
  const rejectBtn = button("Reject", "rv-btn rv-reject", "Reject: the node never runs");
  // Approve with edits: the keys to change, as a JSON object (checked here, then by the
  // kernel as state: merged through the reducers before the node runs).
  const editIn = h("textarea", "rv-edit");
  editIn.placeholder = 'edit before approving (optional), e.g. {"amount": 500}';
  editIn.setAttribute("aria-label", "edits (JSON object)");
  form.append(approverIn, commentIn, editIn, approveBtn, rejectBtn);
  // A node's question (ctx.interrupt): the answer is typed as JSON, checked here before
  // anything is sent, and checked against the question's schema by the kernel.
  const answerBox = h("div", "rv-answer-box");
  const answerIn = h("textarea", "rv-answer");
  answerIn.setAttribute("aria-label", "answer (JSON)");
  const answerBtn = button("Answer", "rv-btn rv-respond", "Send this answer (once)");
  const fieldsBox = h("div", "rv-answer-fields");
  answerBox.append(fieldsBox, answerIn, answerBtn);
  form.append(answerBox);
  let readAnswer = () => JSON.parse(answerIn.value);  // replaced by a form for a schema

  // A form from the question's schema: a field per scalar (string, number, integer,
  // boolean, enum), or per property of an object of scalars; anything else is JSON text.
  // read() returns the value or throws an Error saying what is wrong: nothing is sent then.
  const scalar = (schema, label) => {
    const row = h("label", "rv-answer-field");
    row.append(h("span", null, label));
    let input;
    if (Array.isArray(schema.enum)) {
      input = h("select");
      schema.enum.forEach((v, i) => {
        const o = h("option", null, JSON.stringify(v)); o.value = String(i); input.append(o);
      });
      row.append(input);
      return { row, read: () => schema.enum[Number(input.value)] };
    }
    const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
    if (type === "boolean") {
      input = h("input"); input.type = "checkbox"; row.append(input);
      return { row, read: () => input.checked };
    }
    input = h("input");
    if (type === "number" || type === "integer") input.type = "number";
    input.setAttribute("aria-label", label);
    row.append(input);
    return { row, read: () => {
      if (type !== "number" && type !== "integer") return input.value;
      if (input.value.trim() === "") throw new Error(`${label}: a number is needed`);
      const n = Number(input.value);
      if (type === "integer" && !Number.isInteger(n)) throw new Error(`${label}: a whole number is needed`);
      return n;
    } };
  };
  const isScalar = (sc) => sc && (Array.isArray(sc.enum) ||
    ["string", "number", "integer", "boolean"].includes(Array.isArray(sc.type) ? sc.type[0] : sc.type));
  function buildAnswerForm(schema) {
    fieldsBox.replaceChildren();
    answerIn.hidden = false;
    readAnswer = () => JSON.parse(answerIn.value);
    if (isScalar(schema)) {
      const f = scalar(schema, "answer");
      fieldsBox.append(f.row);
      answerIn.hidden = true;
      readAnswer = f.read;
    } else if (schema && schema.type === "object" && schema.properties &&
               Object.values(schema.properties).every(isScalar)) {
      const fields = Object.entries(schema.properties).map(([k, sc]) => [k, scalar(sc, k)]);
      fields.forEach(([, f]) => fieldsBox.append(f.row));
      answerIn.hidden = true;
      readAnswer = () => Object.fromEntries(fields.map(([k, f]) => [k, f.read()]));
    }
  }
  const decidedLine = h("div", "rv-decided");
  const policyLine = h("div", "rv-policy");  // who this kernel is, and who may decide
  approval.append(approvalHead, approvalState, digestLine, policyLine, form, decidedLine);
  const stateBox = h("section", "rv-state");
  const stateHead = h("div", "rv-section-head", "State");
  const tree = h("div", "rv-tree");
  stateBox.append(stateHead, tree);
  side.append(approval, stateBox);
  main.append(drawingBox, side);

  // log
  const logBox = h("section", "rv-log");
  const logHead = h("div", "rv-section-head rv-log-head");
  const logCount = h("span", "rv-log-count", "Events");
  const filter = h("select", "rv-filter");
  filter.setAttribute("aria-label", "filter events by type");
  const streams = h("div", "rv-streams");  // what running nodes emit, as it comes
  streams.hidden = true;
  const rowsBox = h("div", "rv-log-rows");  // the scroller
  const spacer = h("div", "rv-log-spacer");  // as tall as every row of the filter
  const shownRows = h("div", "rv-log-view");  // the rows in view, moved with the scroll
  spacer.append(shownRows);
  rowsBox.append(spacer);
  logHead.append(logCount, filter);
  logBox.append(logHead, streams, rowsBox);

  root.append(head, errorBox, noticeBox, bar, main, logBox);

  // -- state kept by this view --
  const openPaths = new Map();
  let history = null; // {step, state, changed, overlay, node} while time travelling
  let historyTimer = null;
  let localError = "";

  // -- drawing --
  const drawing = createDrawing({
    model, root, box: drawingBox, ns: "rv",
    onShown: (msg) => { wireFolds(msg); applyOverlay(); log.schedule(); },
    onError: (text) => { localError = text; updateError(); },
  });

  // Subgraph clusters fold to their node and unfold again (a click on the box's label, or
  // on the folded node). The kernel lays the folded drawing out once per set of folds; live
  // progress still only toggles classes, and a folded node is lit for what runs inside it.
  const collapsed = new Set();  // cluster ids this view folded
  let folded = new Map();  // a folded subgraph's node name -> its cluster id
  const own = (map, key) => Object.prototype.hasOwnProperty.call(map || {}, key);

  function toggleFold(cluster) {
    if (collapsed.has(cluster)) collapsed.delete(cluster); else collapsed.add(cluster);
    root.dataset.folding = "true";
    model.send({ kind: "collapse", view: id, collapsed: [...collapsed].sort() });
  }

  function wireFolds(msg) {
    folded = new Map();
    const byId = (dom) => [...drawingBox.querySelectorAll("g[id]")].find((g) => g.id === dom);
    for (const [dom, cluster] of Object.entries(msg.collapsible || {})) {
      const g = byId(dom);
      const label = g && g.querySelector(":scope > text");
      if (!label) continue;
      label.classList.add("rv-fold");
      label.addEventListener("click", () => toggleFold(cluster));
      g.dataset.fold = cluster;
    }
    for (const [dom, cluster] of Object.entries(msg.collapsed || {})) {
      const g = byId(dom);
      if (!g || !own(msg.nodes, dom)) continue;
      folded.set(msg.nodes[dom], cluster);
      g.classList.add("is-collapsed");
      g.dataset.fold = cluster;
      g.addEventListener("click", () => toggleFold(cluster));
    }
    root.dataset.folding = "";
    root.dataset.collapsed = [...folded.values()].sort().join(" ");
  }

  // The name a node is drawn as: inside a folded subgraph, that subgraph's node.
  function shownAs(name) {
    if (typeof name !== "string") return name;
    for (const anchor of folded.keys()) if (name.startsWith(`${anchor}/`)) return anchor;
    return name;
  }

  function applyOverlay() {
    const ov = (history ? history.overlay : model.get("overlay")) || {};
    const inside = ov.inside || {};  // what the child runs of lit subgraph nodes are doing
    const named = (list) => new Set((list || []).map(shownAs));
    const visited = named([...(ov.visited || []), ...(inside.visited || [])]);
    // Every task of a superstep, when several; and the nodes running inside subgraphs.
    const lit = named([...(ov.active || []), ...(inside.current || []), ov.current]);
    const pending = named([ov.pending, ...(inside.pending || [])]);
    const failed = named([ov.failed, ...(inside.failed || [])]);
    const running = shownAs(ov.running);
    const rejected = shownAs(ov.rejected);
    for (const [name, gs] of drawing.nodes) {
      for (const g of gs) {
        g.classList.toggle("is-visited", visited.has(name));
        g.classList.toggle("is-current", lit.has(name) && ov.status !== "completed");
        g.classList.toggle("is-running", running === name);
        g.classList.toggle("is-pending", pending.has(name));
        g.classList.toggle("is-failed", failed.has(name));
        g.classList.toggle("is-rejected", rejected === name);
        g.classList.toggle("is-completed", name === "END" && ov.status === "completed");
      }
    }
    const taken = [...(ov.traversed || []), ...(inside.traversed || [])];
    const counts = new Map(taken.map(([s, t, n]) => [`${s}\u0000${t}`, n]));
    const last = ov.last ? `${ov.last[0]}\u0000${ov.last[1]}` : null;
    for (const { source, target, g } of drawing.edges) {
      const key = `${source}\u0000${target}`;
      g.classList.toggle("is-traversed", (counts.get(key) || 0) > 0);
      g.classList.toggle("is-last", key === last);
      g.dataset.count = String(counts.get(key) || 0);
    }
    root.dataset.overlay = ov.status || "";
  }

  // -- log and streams (run_log.js) --
  const log = createLog({
    model, id, root, box: rowsBox, spacer, shownRows, filter, logCount,
    onComplete: (total) => {  // a full screen of rows shown: the first time, say how soon
      if (root.dataset.firstPaintMs || root.dataset.drawn !== "true" || !total) return;
      root.dataset.firstPaintMs = (performance.now() - born).toFixed(1);
    },
  });
  const streamed = createStreams({ root, box: streams });

  // -- state, approval, controls --
  function updateState() {
    if (history) {
      renderTree(tree, history.state, history.changed, openPaths, "rv", "(empty state)");
      stateHead.textContent = `State after step ${history.step} (read-only; next: ${history.next || history.node})`;
    } else {
      renderTree(tree, model.get("state"), model.get("changed"), openPaths, "rv", "(empty state)");
      stateHead.textContent = "State";
    }
  }

  function updateApproval() {
    const pending = model.get("pending") || {};
    const decided = model.get("decided") || {};
    const isPending = model.get("status") === "pending" && pending.node != null;
    approval.hidden = !isPending && !decided.decision;
    approval.classList.toggle("is-pending", isPending);
    if (isPending) {
      approvalHead.textContent = pending.when === "after"
        ? `Awaiting approval after “${pending.after}” ran (next: “${pending.node}”)`
        : `Awaiting approval before “${pending.node}” runs`;
      if (pending.waiting && pending.waiting.length > 1) {
        // A superstep holds several tasks: each is decided on its own, this one first.
        approvalHead.textContent += ` · task “${pending.task}” (${pending.waiting.length} awaiting: ${pending.waiting.join(", ")})`;
      }
      approvalState.textContent = JSON.stringify(pending.state, null, 2);
      digestLine.textContent = `approving exactly this state · digest ${String(pending.digest || "").slice(0, 12)}…`;
      if (pending.when === "input" && pending.question) {
        const schema = pending.question.schema ? ` · answer: ${JSON.stringify(pending.question.schema)}` : "";
        approvalHead.textContent = `“${pending.node}” asks: ${pending.question.question}${schema}`;
      }
    } else {
      approvalHead.textContent = "Decision";
      approvalState.textContent = "";
      digestLine.textContent = "";
    }
    approvalState.hidden = digestLine.hidden = form.hidden = policyLine.hidden = !isPending;
    const asking = isPending && pending.when === "input";
    answerBox.hidden = !asking;
    if (asking && answerBox.dataset.for !== pending.digest) {
      answerBox.dataset.for = pending.digest || "";
      buildAnswerForm((pending.question || {}).schema || {});
    }
    approveBtn.hidden = editIn.hidden = asking;
    // With an approver policy the kernel decides as its own identity: no typed name.
    const policy = isPending ? pending.policy : "";
    policyLine.textContent = `identity: ${model.get("identity") || "?"}` +
      (policy ? ` · may decide: ${policy}` : "");
    approverIn.readOnly = Boolean(policy);
    if (policy) approverIn.value = model.get("approver") || "";
    if (decided.decision) {
      const note = decided.comment ? ` — ${decided.comment}` : "";
      const who = decided.identity && decided.identity !== decided.by
        ? `${decided.by} (identity ${decided.identity})` : decided.by;
      decidedLine.textContent = `${decided.decision} by ${who} at ${clock(decided.at)}${note}`;
    } else {
      decidedLine.textContent = "";
    }
    updateControls();
  }

  function updateControls() {
    const status = model.get("status");
    const busy = model.get("busy");
    const drivable = ["running", "approved", "cancelled"].includes(status);
    stepBtn.disabled = runBtn.disabled = !drivable || !!busy;
    stopBtn.disabled = !busy;
    approveBtn.disabled = rejectBtn.disabled = status !== "pending" || !!busy;
    root.dataset.busy = busy || "";
  }

  function updateHeader() {
    const status = model.get("status");
    title.textContent = model.get("title");
    badge.textContent = model.get("busy") ? `${status} · ${model.get("busy")}…` : status;
    badge.className = `rv-status st-${safeClass(status)}`;
    where.textContent = `at ${model.get("frontier") || model.get("node")} · step ${model.get("step")}/${model.get("max_steps")}`;
    root.dataset.status = status;
    root.dataset.runId = model.get("run_id");
  }

  function updateError() {
    showMessages(errorBox, noticeBox, model.get("error") || localError, model.get("notice"));
  }

  function updateSlider() {
    const max = model.get("step");
    const wasLive = !history;
    slider.max = String(max);
    if (wasLive) slider.value = String(max);
    histText.textContent = history ? `step ${history.step} of ${max}` : `live (step ${max})`;
    liveBtn.hidden = !history;
    root.dataset.history = history ? String(history.step) : "live";
  }

  function goLive() {
    history = null;
    updateSlider(); updateState(); applyOverlay();
  }

  slider.addEventListener("input", () => {
    clearTimeout(historyTimer);
    historyTimer = setTimeout(() => {
      const step = Number(slider.value);
      if (step >= model.get("step")) goLive();
      else model.send({ kind: "history", view: id, step });
    }, HISTORY_DEBOUNCE_MS);
  });
  liveBtn.addEventListener("click", goLive);
  stepBtn.addEventListener("click", () => model.send({ kind: "step" }));
  runBtn.addEventListener("click", () => model.send({ kind: "run" }));
  stopBtn.addEventListener("click", () => model.send({ kind: "stop" }));
  const decide = (decision) => {
    const pending = model.get("pending") || {};
    let update = null;
    if (decision === "approved" && editIn.value.trim() !== "") {
      try {
        update = JSON.parse(editIn.value);
      } catch (err) {
        update = err;
      }
      if (update instanceof Error || update === null || typeof update !== "object" || Array.isArray(update)) {
        const why = update instanceof Error ? `not JSON (${update.message})` : "not a JSON object of keys";
        localError = `Refused: the edits are ${why}; nothing was sent.`;
        updateError();
        return;
      }
    }
    localError = "";
    // The digest of the state this view shows: the store refuses it if the run moved on.
    const message = {
      kind: "decide", decision, by: approverIn.value, comment: commentIn.value,
      digest: pending.digest || "", task: pending.task || "",
    };
    if (update !== null) message.update = update;
    model.send(message);
  };
  approveBtn.addEventListener("click", () => decide("approved"));
  answerBtn.addEventListener("click", () => {
    const pending = model.get("pending") || {};
    let value;
    try {
      value = readAnswer();
    } catch (err) {
      const what = err instanceof SyntaxError ? `is not JSON (${err.message})` : `is incomplete (${err.message})`;
      localError = `Refused: the answer ${what}; nothing was sent.`;
      updateError();
      return;
    }
    localError = "";
    updateError();
    model.send({
      kind: "respond", value, by: approverIn.value, comment: commentIn.value,
      task: pending.task || "",
    });
  });
  rejectBtn.addEventListener("click", () => decide("rejected"));

  function onMsg(msg, buffers) {
    if (!msg || (msg.view && msg.view !== id)) return;
    if (msg.kind === "events") log.onEvents(msg);
    else if (msg.kind === "rows") log.onRows(msg);
    else if (msg.kind === "tokens") streamed.onTokens(msg);
    else if (msg.kind === "diagram") drawing.show(msg);
    else if (msg.kind === "viz_js" && buffers && buffers.length) acceptViz(buffers[0]);
    else if (msg.kind === "history" && Number(slider.value) === msg.step) {
      history = msg;
      updateSlider(); updateState(); applyOverlay();
    }
  }

  const handlers = {
    "change:overlay": () => { if (!history) applyOverlay(); },
    "change:state change:changed": () => { if (!history) updateState(); },
    "change:pending change:decided change:identity change:approver": updateApproval,
    "change:status change:busy": () => { updateHeader(); updateApproval(); },
    "change:node change:frontier change:step change:max_steps change:title": () => { updateHeader(); updateSlider(); },
    "change:error change:notice": updateError,
    "msg:custom": onMsg,
  };
  for (const [name, fn] of Object.entries(handlers)) model.on(name, fn);

  approverIn.value = model.get("approver") || "";
  updateHeader(); updateError(); updateSlider(); updateState(); updateApproval();
  model.send({ kind: "hello", view: id });

  return () => {
    drawing.disposed = true;
    clearTimeout(historyTimer);
    log.dispose(); streamed.dispose();
    for (const [name, fn] of Object.entries(handlers)) model.off(name, fn);
    try { model.send({ kind: "bye", view: id }); } catch (_) { /* the kernel is gone */ }
  };
}

export default { render };
