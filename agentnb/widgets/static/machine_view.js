// agentnb MachineView: the browser half of agentnb.widgets.MachineView (an anywidget module).
//
// Shared helpers (h, button, clock, viewId, createDrawing, renderTree, viz.js once per page)
// come from live.js, which agentnb.widgets._live.static_text puts before this file; its
// rules hold here too: user data (context, payloads, reasons, reload problems) is set as
// text or attribute values only, and the drawing is laid out once per definition — an
// instance's moves toggle classes on it. The history lives here (sent in batches).

const MAX_HISTORY_ROWS = 500; // rows in the DOM, newest first; every record stays in memory

function render({ model, el }) {
  const id = viewId();
  const root = h("div", "agentnb-mv");
  el.append(root);

  // header, messages, reload
  const { head, title, badge, where, errorBox, noticeBox } = panelHeader("mv", "state");
  const reloadBox = h("div", "mv-reload");

  // main: drawing | events + context
  const main = h("div", "mv-main");
  const drawingBox = h("div", "mv-diagram");
  const side = h("div", "mv-side");
  const eventsBox = h("section", "mv-events");
  const buttonsBox = h("div", "mv-buttons");
  const payloadIn = h("textarea", "mv-payload");
  payloadIn.rows = 2;
  payloadIn.placeholder = 'payload sent with the event (JSON, optional), e.g. {"speed": 30}';
  payloadIn.setAttribute("aria-label", "payload (JSON)");
  eventsBox.append(h("div", "mv-section-head", "Events"), buttonsBox, payloadIn);
  const contextBox = h("section", "mv-context");
  const tree = h("div", "mv-tree");
  contextBox.append(h("div", "mv-section-head", "Context"), tree);
  side.append(eventsBox, contextBox);
  main.append(drawingBox, side);

  // history
  const historyBox = h("section", "mv-history");
  const historyHead = h("div", "mv-section-head", "History");
  const rowsBox = h("div", "mv-rows");
  historyBox.append(historyHead, rowsBox);

  // statecharts: microstep mode and timers (hidden for flat machines)
  const stepsBox = h("section", "mv-steps");
  const stepsHead = h("div", "mv-section-head", "Microsteps");
  // Microstep mode: ◀ prev steps back from the live configuration into the microsteps that
  // led to it (the last one first), next ▶ forward again, live leaves the mode.
  const stepPrev = button("◀ prev", "mv-btn mv-step-prev", "the microstep before (from live: the last one)");
  const stepNext = button("next ▶", "mv-btn mv-step-next", "the next microstep");
  const stepLive = button("live", "mv-btn mv-step-live", "leave microstep mode: the current configuration");
  const stepWhere = h("span", "mv-step-where", "");
  const stepList = h("ol", "mv-step-list");
  stepsBox.append(stepsHead, h("div", "mv-step-bar", null), stepList);
  stepsBox.querySelector(".mv-step-bar").append(stepPrev, stepNext, stepLive, stepWhere);
  const timersBox = h("section", "mv-timers");
  const timersHead = h("div", "mv-section-head", "Timers");
  const timerRows = h("div", "mv-timer-rows");
  timersBox.append(timersHead, timerRows);

  root.append(head, errorBox, noticeBox, reloadBox, main, stepsBox, timersBox, historyBox);

  // -- state kept by this view --
  const records = new Map(); // seq -> row
  let newest = 0;
  const openPaths = new Map();
  let localError = "";

  const drawing = createDrawing({
    model, root, box: drawingBox, ns: "mv",
    onShown: (msg) => { root.dataset.generation = String(msg.generation || ""); applyOverlay(); },
    onError: (text) => { localError = text; updateError(); },
  });

  // -- drawing: the current state lit, the last transition marked (parallel ones apart) --
  const edgeKey = (s, t, k) => `${s}\u0000${t}\u0000${k || ""}`;

  let step = -1; // the microstep shown, -1: the live configuration

  function applyOverlay() {
    if (step >= 0) { applyStep(); return; }
    const ov = model.get("overlay") || {};
    const visited = new Set(ov.visited || []);
    const active = new Set(ov.active || []); // a statechart's configuration, boxes included
    for (const [name, gs] of drawing.nodes) {
      for (const g of gs) {
        g.classList.toggle("is-visited", visited.has(name));
        g.classList.toggle("is-current", ov.current === name || active.has(name));
        g.classList.toggle("is-done", ov.current === name && ov.status === "completed");
      }
    }
    const counts = new Map((ov.keyed || []).map(([s, t, k, n]) => [edgeKey(s, t, k), n]));
    const last = ov.last ? edgeKey(...ov.last) : null;
    for (const e of drawing.edges) {
      const key = edgeKey(e.source, e.target, e.key);
      const n = counts.get(key) || 0;
      e.g.classList.toggle("is-traversed", n > 0);
      e.g.classList.toggle("is-last", key === last);
      e.g.dataset.count = String(n);
    }
    root.dataset.current = ov.current || "";
  }

  // -- microstep mode: what the algorithm did for the last event, one microstep at a time --
  function applyStep() {
    const steps = model.get("microsteps") || [];
    const s = steps[step];
    if (!s) { step = -1; applyOverlay(); return; }
    const active = new Set(s.active || []);
    const exited = new Set(s.exited || []);
    for (const [name, gs] of drawing.nodes) {
      for (const g of gs) {
        g.classList.toggle("is-current", active.has(name));
        g.classList.toggle("is-visited", exited.has(name));
        g.classList.toggle("is-done", false);
      }
    }
    const taken = new Set((s.edges || []).map((e) => edgeKey(...e)));
    for (const e of drawing.edges) {
      const key = edgeKey(e.source, e.target, e.key);
      e.g.classList.toggle("is-traversed", taken.has(key));
      e.g.classList.toggle("is-last", taken.has(key));
    }
  }

  function showStep(i) {
    const steps = model.get("microsteps") || [];
    step = i >= 0 && i < steps.length ? i : -1;
    for (const [n, li] of [...stepList.children].entries()) li.classList.toggle("is-shown", n === step);
    root.dataset.microstep = step >= 0 ? String(step + 1) : "";
    stepPrev.disabled = step === 0 || !steps.length;
    stepNext.disabled = step < 0 || step >= steps.length - 1;
    stepLive.disabled = step < 0;
    stepWhere.textContent = step >= 0
      ? `microstep mode: ${step + 1} of ${steps.length}`
      : "live: the configuration now";
    applyOverlay();
  }

  function updateSteps() {
    const steps = model.get("microsteps") || [];
    stepsBox.hidden = !steps.length;
    // An instance's first microsteps are its start, not an event anybody sent.
    const starting = steps.length > 0 && steps[0].event == null;
    const what = starting ? "the instance's start" : `the last event, ${JSON.stringify(steps[0] ? steps[0].event : "")}`;
    stepsHead.textContent = `Microsteps (${steps.length}) of ${what}`;
    const items = steps.map((s, i) => {
      const li = h("li", "mv-step");
      li.append(h("div", "mv-step-title", s.title));
      for (const [label, list] of [["taken", s.taken], ["preempted", s.preempted],
        ["actions", s.actions], ["queued", s.queued]]) {
        if (list && list.length) li.append(h("div", `mv-step-${label}`, `${label}: ${list.join(", ")}`));
      }
      li.addEventListener("click", () => showStep(i));
      return li;
    });
    stepList.replaceChildren(...items);
    root.dataset.microsteps = String(steps.length);
    showStep(-1);
  }
  stepPrev.addEventListener("click", () => {
    const n = (model.get("microsteps") || []).length;
    showStep(step < 0 ? n - 1 : Math.max(0, step - 1));
  });
  stepNext.addEventListener("click", () => showStep(step + 1));
  stepLive.addEventListener("click", () => showStep(-1));

  // -- timers pending, with a countdown from when the kernel read them --
  let timersAt = Date.now();
  function drawTimers() {
    const timers = model.get("timers") || [];
    timersBox.hidden = !timers.length;
    const gone = (Date.now() - timersAt) / 1000;
    timerRows.replaceChildren(...timers.map((t) => {
      const left = t.in - gone;
      const row = h("div", "mv-timer");
      row.dataset.event = t.event;
      row.classList.toggle("is-due", left <= 0);
      row.append(
        h("span", "mv-ev", t.event),
        h("span", "mv-sendid", t.sendid ? `id ${t.sendid}` : ""),
        h("span", "mv-left", left > 0 ? `in ${left.toFixed(1)} s` : "due: run_due() fires it"),
      );
      return row;
    }));
    root.dataset.timers = String(timers.length);
  }
  function updateTimers() { timersAt = Date.now(); drawTimers(); }
  const ticker = setInterval(drawTimers, 1000);

  // -- one button per event; a disabled one says why --
  function send(event) {
    // The seq this view shows: the kernel refuses the click if the instance moved on.
    model.send({ kind: "send", event, payload: payloadIn.value, seq: model.get("seq") });
  }

  function updateButtons() {
    const busy = model.get("busy");
    const items = [];
    for (const b of model.get("buttons") || []) {
      const item = h("div", "mv-event");
      item.dataset.event = b.event; // an attribute value, never markup
      item.classList.toggle("is-disabled", !b.enabled);
      const btn = button(b.event, "mv-btn mv-send", b.reason);
      btn.dataset.event = b.event;
      btn.disabled = !b.enabled || !!busy;
      btn.addEventListener("click", () => send(b.event));
      item.append(btn, h("span", "mv-why", b.reason));
      items.push(item);
    }
    if (!items.length) items.push(h("div", "mv-empty", "(this machine has no events)"));
    buttonsBox.replaceChildren(...items);
    root.dataset.busy = busy || "";
  }

  // -- history, newest first --
  function rowEl(r) {
    const row = h("div", "mv-row");
    row.dataset.seq = String(r.seq);
    row.dataset.event = r.event;
    if (r.ignored) row.classList.add("is-ignored");
    const detail = [r.ignored ? r.reason : r.delta, r.payload ? `payload ${r.payload}` : ""];
    row.append(
      h("span", "mv-seq", `#${r.seq}`),
      h("span", "mv-time", clock(r.at)),
      h("span", "mv-ev", r.event),
      h("span", "mv-move", r.ignored ? `ignored in ${r.source}` : `${r.source} → ${r.target}`),
      h("span", "mv-detail", detail.filter(Boolean).join(" · ")),
    );
    return row;
  }

  function onRecords(msg) {
    const fresh = (msg.records || []).filter((r) => msg.reset || !records.has(r.seq));
    if (msg.reset) { records.clear(); newest = 0; }
    const inOrder = !msg.reset && fresh.every((r) => r.seq > newest);
    for (const r of fresh) { records.set(r.seq, r); newest = Math.max(newest, r.seq); }
    if (inOrder) {
      // The common case: new records on top, the oldest rows beyond the cap dropped.
      const top = fresh.slice(-MAX_HISTORY_ROWS).sort((a, b) => b.seq - a.seq).map(rowEl);
      for (const placeholder of rowsBox.querySelectorAll(":scope > .mv-empty")) placeholder.remove();
      rowsBox.prepend(...top);
      let extra = rowsBox.childElementCount - MAX_HISTORY_ROWS;
      while (extra-- > 0) rowsBox.lastElementChild.remove();
    } else {
      const rows = [...records.values()].sort((a, b) => b.seq - a.seq).slice(0, MAX_HISTORY_ROWS);
      rowsBox.replaceChildren(...rows.map(rowEl));
    }
    if (!records.size) rowsBox.replaceChildren(h("div", "mv-empty", "(no events yet)"));
    historyHead.textContent = `History (${records.size})`;
    root.dataset.records = String(records.size);
  }

  // -- header, context, messages, reloads --
  function updateHeader() {
    title.textContent = model.get("title");
    badge.textContent = model.get("state");
    badge.classList.toggle("is-final", !!model.get("final"));
    where.textContent = `${model.get("machine_name")} · ${model.get("seq")} events · definition ${model.get("generation")}`;
    root.dataset.state = model.get("state");
    root.dataset.seq = String(model.get("seq"));
    root.dataset.instanceId = model.get("instance_id");
  }

  function updateContext() {
    renderTree(tree, model.get("context"), model.get("changed"), openPaths, "mv", "(empty context)");
  }

  function updateError() {
    showMessages(errorBox, noticeBox, model.get("error") || localError, model.get("notice"));
  }

  function updateReload() {
    const r = model.get("reload") || {};
    reloadBox.hidden = !r.status;
    reloadBox.classList.toggle("is-refused", r.status === "refused");
    const file = String(r.path || "").split(/[\\/]/).pop();
    const text = r.status === "refused"
      ? `Reload of ${file} refused at ${clock(r.at)}: generation ${r.generation} stays live.`
      : `Definition generation ${r.generation} from ${file}, applied at ${clock(r.at)}.`;
    const problems = h("ul", "mv-problems");
    for (const p of r.problems || []) problems.append(h("li", null, p));
    reloadBox.replaceChildren(h("div", "mv-reload-head", text), problems);
    root.dataset.reload = r.status || "";
  }

  function onMsg(msg, buffers) {
    if (!msg || (msg.view && msg.view !== id)) return;
    if (msg.kind === "records") onRecords(msg);
    else if (msg.kind === "diagram") drawing.show(msg);
    else if (msg.kind === "viz_js" && buffers && buffers.length) acceptViz(buffers[0]);
  }

  const handlers = {
    "change:overlay": applyOverlay,
    "change:context change:changed": updateContext,
    "change:buttons change:busy": updateButtons,
    "change:state change:seq change:final change:title change:machine_name change:generation": updateHeader,
    "change:error change:notice": updateError,
    "change:reload": updateReload,
    "change:microsteps": updateSteps,
    "change:timers": updateTimers,
    "msg:custom": onMsg,
  };
  for (const [name, fn] of Object.entries(handlers)) model.on(name, fn);

  updateHeader(); updateError(); updateReload(); updateButtons(); updateContext();
  updateSteps(); updateTimers();
  model.send({ kind: "hello", view: id });

  return () => {
    drawing.disposed = true;
    clearInterval(ticker);
    for (const [name, fn] of Object.entries(handlers)) model.off(name, fn);
    try { model.send({ kind: "bye", view: id }); } catch (_) { /* the kernel is gone */ }
  };
}

export default { render };
