// agentnb RunView: the browser half of agentnb.widgets.RunView (an anywidget ES module).
//
// Rules this file keeps:
// - User data (state, node names, comments, approvers) is only ever set with textContent or
//   as attribute values, never parsed as HTML. The SVG from Python is parsed with DOMParser
//   as SVG and scrubbed of scripts, event handlers and outside links before it is inserted.
// - The drawing is laid out once; a run's progress toggles classes on its SVG elements.
// - The whole event log lives here (sent in batches), not in a synced trait.
// - Graphviz-in-WebAssembly (viz.js, 1.2 MB) is fetched from the kernel once per page and
//   cached on globalThis, whichever widget asked first.

const VIZ_SLOT = "__agentnb_viz";
const MAX_LOG_ROWS = 1000; // rows in the DOM; every event stays in memory and in the filter
const HISTORY_DEBOUNCE_MS = 120;
const TREE_CHILDREN = 200; // children shown per branch of the state tree

function h(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = String(text);
  return el;
}

function button(label, className, title) {
  const b = h("button", `rv-btn ${className}`, label);
  b.type = "button";
  if (title) b.title = title;
  return b;
}

function clock(at) {
  if (typeof at !== "number") return "";
  const d = new Date(at * 1000);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function safeClass(text) {
  return String(text).toLowerCase().replace(/[^a-z0-9_-]/g, "_");
}

// -- Graphviz in the browser, once per page ------------------------------------------------

function vizSlot() {
  let slot = globalThis[VIZ_SLOT];
  if (!slot) {
    slot = { imports: 0, requests: 0, loading: false, asked: false };
    slot.ready = new Promise((resolve, reject) => {
      slot.resolve = resolve;
      slot.reject = reject;
    });
    globalThis[VIZ_SLOT] = slot;
  }
  return slot;
}

function requestViz(model) {
  const slot = vizSlot();
  if (!slot.loading && !slot.asked) {
    slot.asked = true;
    slot.requests += 1;
    model.send({ kind: "viz_js" });
    // If that kernel never answers (it died), let the next view ask its own kernel.
    setTimeout(() => { if (!slot.loading) slot.asked = false; }, 15000);
  }
  return slot.ready;
}

async function acceptViz(buffer) {
  const slot = vizSlot();
  if (slot.loading) return;
  slot.loading = true;
  slot.imports += 1;
  const url = URL.createObjectURL(new Blob([buffer], { type: "text/javascript" }));
  try {
    const module = await import(/* webpackIgnore: true */ url);
    slot.resolve(await module.instance());
  } catch (err) {
    slot.reject(err);
  } finally {
    URL.revokeObjectURL(url);
  }
}

// -- SVG, parsed as data and scrubbed -------------------------------------------------------

function scrub(root) {
  for (const el of [root, ...root.querySelectorAll("*")]) {
    const tag = el.localName.toLowerCase();
    if (tag === "script" || tag === "foreignobject" || tag === "iframe" || tag === "style") {
      el.remove();
      continue;
    }
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      const flat = attr.value.replace(/\s+/g, "").toLowerCase();
      const link = name === "href" || name.endsWith(":href");
      if (name.startsWith("on") || name === "style" || (link && !attr.value.startsWith("#")) ||
          flat.includes("javascript:")) {
        el.removeAttribute(attr.name);
      }
    }
  }
  return root;
}

function parseSvg(text) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const root = doc.documentElement;
  if (!root || root.localName !== "svg" || doc.getElementsByTagName("parsererror").length) {
    throw new Error("the drawing is not valid SVG");
  }
  return document.importNode(scrub(root), true);
}

// -- the state tree ----------------------------------------------------------------------

function leafText(value) {
  return typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value));
}

function treeNode(key, value, path, open, changed) {
  const isObject = value !== null && typeof value === "object";
  const item = h("div", "rv-tree-item");
  if (changed) item.classList.add("is-changed");
  if (!isObject) {
    item.classList.add("rv-leaf");
    item.append(h("span", "rv-key", key), h("span", `rv-val rv-${value === null ? "null" : typeof value}`, leafText(value)));
    return item;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const details = h("details", "rv-branch");
  const summary = h("summary");
  summary.append(h("span", "rv-key", key), h("span", "rv-meta", Array.isArray(value) ? `[${entries.length}]` : `{${entries.length}}`));
  details.append(summary);
  let filled = false;
  const fill = () => {
    if (filled) return;
    filled = true;
    const box = h("div", "rv-children");
    for (const [k, v] of entries.slice(0, TREE_CHILDREN)) box.append(treeNode(k, v, `${path}/${k}`, open, false));
    if (entries.length > TREE_CHILDREN) box.append(h("div", "rv-more", `… ${entries.length - TREE_CHILDREN} more`));
    details.append(box);
  };
  // Children are built when first opened: a big state costs nothing until someone looks.
  details.addEventListener("toggle", () => {
    if (details.open) { fill(); open.set(path, true); } else { open.set(path, false); }
  });
  const wantOpen = open.has(path) ? open.get(path) : entries.length <= 12 && path.split("/").length <= 2;
  if (wantOpen) { fill(); details.open = true; }
  item.append(details);
  return item;
}

function renderTree(box, state, changed, open) {
  const keep = box.scrollTop;
  const changedKeys = new Set(changed || []);
  const root = h("div", "rv-tree-root");
  const entries = Object.entries(state || {});
  if (!entries.length) root.append(h("div", "rv-empty", "(empty state)"));
  for (const [k, v] of entries) root.append(treeNode(k, v, `/${k}`, open, changedKeys.has(k)));
  box.replaceChildren(root);
  box.scrollTop = keep;
}

// -- the view ----------------------------------------------------------------------------

function render({ model, el }) {
  const viewId = `v${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  const root = h("div", "agentnb-rv");
  el.append(root);

  // header
  const head = h("div", "rv-head");
  const title = h("span", "rv-title");
  const badge = h("span", "rv-status");
  const where = h("span", "rv-where");
  head.append(title, badge, where);
  const errorBox = h("div", "rv-error");
  errorBox.setAttribute("role", "alert");
  const noticeBox = h("div", "rv-notice");
  noticeBox.setAttribute("aria-live", "polite");

  // toolbar
  const bar = h("div", "rv-toolbar");
  const stepBtn = button("Step", "rv-step", "Run one node (or stop at an approval)");
  const runBtn = button("Run", "rv-run", "Run to the next approval or the end");
  const stopBtn = button("Stop", "rv-stop", "Cancel the drive in progress (the run can be continued)");
  const histLabel = h("label", "rv-history");
  const slider = h("input", "rv-slider");
  slider.type = "range"; slider.min = "0"; slider.step = "1";
  slider.setAttribute("aria-label", "history: state after step");
  const histText = h("span", "rv-history-text");
  const liveBtn = button("Live", "rv-live", "Back to the live run");
  histLabel.append(h("span", null, "History "), slider, histText);
  bar.append(stepBtn, runBtn, stopBtn, histLabel, liveBtn);

  // main: drawing | approval + state
  const main = h("div", "rv-main");
  const drawing = h("div", "rv-diagram");
  const drawingNote = h("div", "rv-drawing-note", "drawing…");
  drawing.append(drawingNote);
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
  const approveBtn = button("Approve", "rv-approve", "Approve exactly the state shown");
  const rejectBtn = button("Reject", "rv-reject", "Reject: the node never runs");
  form.append(approverIn, commentIn, approveBtn, rejectBtn);
  const decidedLine = h("div", "rv-decided");
  approval.append(approvalHead, approvalState, digestLine, form, decidedLine);
  const stateBox = h("section", "rv-state");
  const stateHead = h("div", "rv-section-head", "State");
  const tree = h("div", "rv-tree");
  stateBox.append(stateHead, tree);
  side.append(approval, stateBox);
  main.append(drawing, side);

  // log
  const logBox = h("section", "rv-log");
  const logHead = h("div", "rv-section-head rv-log-head");
  const logCount = h("span", "rv-log-count", "Events");
  const filter = h("select", "rv-filter");
  filter.setAttribute("aria-label", "filter events by type");
  const hiddenNote = h("div", "rv-log-hidden");
  const rowsBox = h("div", "rv-log-rows");
  logHead.append(logCount, filter);
  logBox.append(logHead, hiddenNote, rowsBox);

  root.append(head, errorBox, noticeBox, bar, main, logBox);

  // -- state kept by this view --
  const log = { rows: [], seqs: new Set(), types: new Set(), lastSeq: 0 };
  const openPaths = new Map();
  let nodeEls = new Map(); // node name -> [g]
  let edgeEls = []; // [source, target, g]
  let history = null; // {step, state, changed, overlay, node} while time travelling
  let historyTimer = null;
  let localError = "";
  let disposed = false;

  // -- drawing --
  function indexDrawing(svg, msg) {
    nodeEls = new Map();
    edgeEls = [];
    for (const g of svg.querySelectorAll("g[id]")) {
      const id = g.getAttribute("id");
      if (Object.prototype.hasOwnProperty.call(msg.nodes, id)) {
        const name = msg.nodes[id];
        g.dataset.name = name; // an attribute value, never markup
        if (!nodeEls.has(name)) nodeEls.set(name, []);
        nodeEls.get(name).push(g);
      } else if (Object.prototype.hasOwnProperty.call(msg.edges, id)) {
        const [s, t] = msg.edges[id];
        edgeEls.push([s, t, g]);
      }
      if (Object.prototype.hasOwnProperty.call(msg.titles, id)) {
        const t = g.querySelector(":scope > title");
        if (t) t.textContent = msg.titles[id];
      }
    }
  }

  function showDrawing(svg, msg) {
    svg.classList.add("rv-svg"); // natural size, shrunk to fit (CSS), never blown up
    indexDrawing(svg, msg);
    drawing.replaceChildren(svg);
    if (msg.note) drawing.append(h("div", "rv-drawing-note", msg.note));
    applyOverlay();
  }

  async function onDiagram(msg) {
    try {
      if (msg.mode === "svg") {
        showDrawing(parseSvg(msg.svg), msg);
      } else {
        drawingNote.textContent = "laying out in the browser…";
        const viz = await requestViz(model);
        if (disposed) return;
        showDrawing(scrub(viz.renderSVGElement(msg.dot)), msg);
        root.dataset.drawer = "viz";
      }
      root.dataset.drawn = "true";
    } catch (err) {
      drawingNote.textContent = "The drawing could not be shown.";
      localError = `Drawing failed: ${err && err.message ? err.message : err}`;
      updateError();
    }
  }

  function applyOverlay() {
    const ov = (history ? history.overlay : model.get("overlay")) || {};
    const visited = new Set(ov.visited || []);
    for (const [name, gs] of nodeEls) {
      for (const g of gs) {
        g.classList.toggle("is-visited", visited.has(name));
        g.classList.toggle("is-current", ov.current === name && ov.status !== "completed");
        g.classList.toggle("is-running", ov.running === name);
        g.classList.toggle("is-pending", ov.pending === name);
        g.classList.toggle("is-failed", ov.failed === name);
        g.classList.toggle("is-rejected", ov.rejected === name);
        g.classList.toggle("is-completed", name === "END" && ov.status === "completed");
      }
    }
    const counts = new Map((ov.traversed || []).map(([s, t, n]) => [`${s}\u0000${t}`, n]));
    const last = ov.last ? `${ov.last[0]}\u0000${ov.last[1]}` : null;
    for (const [s, t, g] of edgeEls) {
      const key = `${s}\u0000${t}`;
      g.classList.toggle("is-traversed", (counts.get(key) || 0) > 0);
      g.classList.toggle("is-last", key === last);
      g.dataset.count = String(counts.get(key) || 0);
    }
    root.dataset.overlay = ov.status || "";
  }

  // -- log --
  function rowEl(r) {
    const row = h("div", "rv-log-row");
    row.dataset.type = r.type;
    row.dataset.seq = String(r.seq);
    row.classList.add(`t-${safeClass(r.type)}`);
    row.append(
      h("span", "rv-seq", `#${r.seq}`),
      h("span", "rv-stepno", `step ${r.step}`),
      h("span", "rv-type", r.type),
      h("span", "rv-node", r.node == null ? "" : r.node),
      h("span", "rv-time", clock(r.at)),
      h("span", "rv-sum", r.summary),
    );
    return row;
  }

  function matches(r) {
    return !filter.value || r.type === filter.value;
  }

  function atBottom() {
    return rowsBox.scrollHeight - rowsBox.scrollTop - rowsBox.clientHeight < 8;
  }

  function updateHiddenNote() {
    const matching = filter.value ? log.rows.filter(matches).length : log.rows.length;
    const hidden = matching - rowsBox.childElementCount;
    hiddenNote.textContent = hidden > 0 ? `${hidden} earlier events not shown (filter to see them)` : "";
  }

  function renderLog() {
    const shown = log.rows.filter(matches);
    const frag = document.createDocumentFragment();
    for (const r of shown.slice(Math.max(0, shown.length - MAX_LOG_ROWS))) frag.append(rowEl(r));
    rowsBox.replaceChildren(frag);
    updateHiddenNote();
    rowsBox.scrollTop = rowsBox.scrollHeight;
  }

  function updateFilter() {
    const current = filter.value;
    const options = [h("option", null, `all types`)];
    options[0].value = "";
    for (const t of [...log.types].sort()) {
      const o = h("option", null, t);
      o.value = t;
      options.push(o);
    }
    filter.replaceChildren(...options);
    filter.value = log.types.has(current) ? current : "";
  }

  function onEvents(msg) {
    const fresh = [];
    let ordered = true;
    if (msg.reset) { log.rows = []; log.seqs = new Set(); log.lastSeq = 0; }
    for (const r of msg.events || []) {
      if (log.seqs.has(r.seq)) continue;
      if (r.seq < log.lastSeq) ordered = false;
      log.seqs.add(r.seq);
      log.rows.push(r);
      log.lastSeq = Math.max(log.lastSeq, r.seq);
      fresh.push(r);
    }
    let newType = false;
    for (const r of fresh) if (!log.types.has(r.type)) { log.types.add(r.type); newType = true; }
    if (newType) updateFilter();
    logCount.textContent = `Events (${log.rows.length})`;
    root.dataset.events = String(log.rows.length);
    if (msg.reset || !ordered) {
      log.rows.sort((a, b) => a.seq - b.seq);
      renderLog();
      return;
    }
    const follow = atBottom();
    const shown = fresh.filter(matches);
    // Build only rows that will stay: a batch of thousands keeps just its newest ones.
    const frag = document.createDocumentFragment();
    for (const r of shown.slice(Math.max(0, shown.length - MAX_LOG_ROWS))) frag.append(rowEl(r));
    if (shown.length >= MAX_LOG_ROWS) rowsBox.replaceChildren(frag);
    else rowsBox.append(frag);
    let extra = rowsBox.childElementCount - MAX_LOG_ROWS;
    while (extra-- > 0) rowsBox.firstElementChild.remove();
    updateHiddenNote();
    if (follow) rowsBox.scrollTop = rowsBox.scrollHeight;
  }

  // -- state, approval, controls --
  function updateState() {
    if (history) {
      renderTree(tree, history.state, history.changed, openPaths);
      stateHead.textContent = `State after step ${history.step} (read-only; next: ${history.node})`;
    } else {
      renderTree(tree, model.get("state"), model.get("changed"), openPaths);
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
      approvalState.textContent = JSON.stringify(pending.state, null, 2);
      digestLine.textContent = `approving exactly this state · digest ${String(pending.digest || "").slice(0, 12)}…`;
    } else {
      approvalHead.textContent = "Decision";
      approvalState.textContent = "";
      digestLine.textContent = "";
    }
    approvalState.hidden = digestLine.hidden = form.hidden = !isPending;
    if (decided.decision) {
      const note = decided.comment ? ` — ${decided.comment}` : "";
      decidedLine.textContent = `${decided.decision} by ${decided.by} at ${clock(decided.at)}${note}`;
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
    where.textContent = `at ${model.get("node")} · step ${model.get("step")}/${model.get("max_steps")}`;
    root.dataset.status = status;
    root.dataset.runId = model.get("run_id");
  }

  function updateError() {
    const text = model.get("error") || localError;
    errorBox.textContent = text;
    errorBox.hidden = !text;
    noticeBox.textContent = model.get("notice");
    noticeBox.hidden = !model.get("notice");
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
      else model.send({ kind: "history", view: viewId, step });
    }, HISTORY_DEBOUNCE_MS);
  });
  liveBtn.addEventListener("click", goLive);
  filter.addEventListener("change", renderLog);
  stepBtn.addEventListener("click", () => model.send({ kind: "step" }));
  runBtn.addEventListener("click", () => model.send({ kind: "run" }));
  stopBtn.addEventListener("click", () => model.send({ kind: "stop" }));
  const decide = (decision) => {
    const pending = model.get("pending") || {};
    // The digest of the state this view shows: the store refuses it if the run moved on.
    model.send({
      kind: "decide", decision, by: approverIn.value, comment: commentIn.value,
      digest: pending.digest || "",
    });
  };
  approveBtn.addEventListener("click", () => decide("approved"));
  rejectBtn.addEventListener("click", () => decide("rejected"));

  function onMsg(msg, buffers) {
    if (!msg || (msg.view && msg.view !== viewId)) return;
    if (msg.kind === "events") onEvents(msg);
    else if (msg.kind === "diagram") onDiagram(msg);
    else if (msg.kind === "viz_js" && buffers && buffers.length) acceptViz(buffers[0]);
    else if (msg.kind === "history" && Number(slider.value) === msg.step) {
      history = msg;
      updateSlider(); updateState(); applyOverlay();
    }
  }

  const handlers = {
    "change:overlay": () => { if (!history) applyOverlay(); },
    "change:state change:changed": () => { if (!history) updateState(); },
    "change:pending change:decided": updateApproval,
    "change:status change:busy": () => { updateHeader(); updateApproval(); },
    "change:node change:step change:max_steps change:title": () => { updateHeader(); updateSlider(); },
    "change:error change:notice": updateError,
    "msg:custom": onMsg,
  };
  for (const [name, fn] of Object.entries(handlers)) model.on(name, fn);

  approverIn.value = model.get("approver") || "";
  updateHeader(); updateError(); updateSlider(); updateState(); updateApproval();
  model.send({ kind: "hello", view: viewId });

  return () => {
    disposed = true;
    clearTimeout(historyTimer);
    for (const [name, fn] of Object.entries(handlers)) model.off(name, fn);
    try { model.send({ kind: "bye", view: viewId }); } catch (_) { /* the kernel is gone */ }
  };
}

export default { render };
