// agentnb RunView: the event log and the streamed rows (part of run_view.js's module).
//
// agentnb.widgets._live.static_text puts this file after live.js and before run_view.js;
// like live.js it declares functions and constants only, and sets user data as text only.
//
// The log is virtual: the kernel says how many rows there are (in all and per type) and
// sends the newest; the log asks for the rows it scrolls to ("rows" messages) and keeps a
// bounded cache of them. Only the rows in view are in the DOM, at a fixed height, repainted
// at most once per animation frame — a run of 100,000 events costs a dozen rows.
// What a running node emits (ctx.emit) arrives as "tokens" batches, appended per frame.

const ROW_PX = 18;          // every log row's height (CSS .rv-log-row says the same)
const MAX_SCROLL_PX = 8e6;  // past this the scroll range is scaled (browsers cap heights)
const PAGE_ROWS = 200;      // rows asked for at once (the kernel's page)
const CACHE_ROWS = 2000;    // rows kept here; the farthest from the view go first
const STREAM_ROWS = 6;      // streamed-text rows shown; the oldest ended ones go first
const STREAM_CHARS = 4000;  // characters of a streamed row kept (the newest)

// The log of view `id` in the scroller `box` (holding `spacer` > `shownRows`), filtered by
// the <select> `filter`, its count in `logCount`. `onComplete(total)` is called after each
// paint that had every row it shows. Returns {onEvents, onRows, schedule, dispose}.
function createLog({ model, id, root, box, spacer, shownRows, filter, logCount, onComplete }) {
  // total/counts: what the kernel last said; cache: row index (in the filter) -> row.
  const log = { total: 0, counts: {}, cache: new Map(), asked: null, answered: null, req: 0 };
  let painting = 0;  // a repaint is scheduled for the next animation frame

  function fillRow(row, r) {
    row.className = "rv-log-row";
    if (!r) {  // asked for, not here yet
      row.classList.add("is-loading");
      row.dataset.seq = ""; row.dataset.i = "";
      for (const span of row.children) span.textContent = "";
      row.lastElementChild.textContent = "…";
      return;
    }
    row.classList.add(`t-${safeClass(r.type)}`);
    row.dataset.type = r.type;
    row.dataset.seq = String(r.seq);
    const texts = [`#${r.seq}`, `step ${r.step}`, r.type, r.node == null ? "" : r.node, clock(r.at), r.summary];
    texts.forEach((t, k) => { row.children[k].textContent = t; });
  }

  function newRow() {
    const row = h("div", "rv-log-row");
    for (const c of ["rv-seq", "rv-stepno", "rv-type", "rv-node", "rv-time", "rv-sum"]) row.append(h("span", c));
    return row;
  }

  const size = () => (filter.value ? log.counts[filter.value] || 0 : log.total);

  // Which rows the scroll position shows; past MAX_SCROLL_PX the range is scaled.
  function viewRange() {
    const n = size();
    const visible = Math.max(1, Math.ceil(box.clientHeight / ROW_PX) + 1);
    const full = n * ROW_PX;
    const height = Math.min(full, MAX_SCROLL_PX);
    const room = Math.max(1, height - box.clientHeight);
    const top = Math.min(box.scrollTop, room);
    const first = full <= MAX_SCROLL_PX
      ? Math.floor(top / ROW_PX)
      : Math.round((top / room) * Math.max(0, n - visible + 1));
    const offset = full <= MAX_SCROLL_PX ? top - (top % ROW_PX) : top;
    return { n, first: Math.max(0, Math.min(first, Math.max(0, n - 1))), visible, height, offset };
  }

  function paint() {
    painting = 0;
    const { n, first, visible, height, offset } = viewRange();
    spacer.style.height = `${height}px`;
    shownRows.style.transform = `translateY(${offset}px)`;
    const last = Math.min(n, first + visible);
    while (shownRows.childElementCount < last - first) shownRows.append(newRow());
    while (shownRows.childElementCount > last - first) shownRows.lastElementChild.remove();
    let missing = -1;
    for (let i = first; i < last; i++) {
      const row = shownRows.children[i - first];
      const r = log.cache.get(i);
      fillRow(row, r);
      row.dataset.i = String(i);
      if (!r && missing < 0) missing = i;
    }
    root.dataset.logFirst = String(first);
    root.dataset.logRows = String(last - first);
    root.dataset.logLoading = missing >= 0 ? "true" : "";
    if (missing >= 0) ask(missing, first, last);
    else onComplete(log.total);
  }

  function schedule() {
    if (!painting) painting = requestAnimationFrame(paint);
  }

  // Ask the kernel for the rows around the view, once per range (it answers the latest).
  function ask(missing, first, last) {
    const kind = filter.value;
    const covers = (a) => a && a.filter === kind && a.start <= missing && missing < a.start + PAGE_ROWS;
    if (covers(log.asked)) return;  // on its way
    // Answered already and still missing: the kernel has no more there until the log grows.
    if (covers(log.answered) && log.answered.total === log.total) return;
    const start = Math.max(0, missing - PAGE_ROWS / 4);
    log.req += 1;
    log.asked = { filter: kind, start, req: log.req };
    model.send({ kind: "rows", view: id, filter: kind, start, count: PAGE_ROWS, req: log.req });
  }

  // Keep the cache bounded: the rows farthest from the view go.
  function trimCache(first) {
    if (log.cache.size <= CACHE_ROWS) return;
    const keys = [...log.cache.keys()].sort((a, b) => Math.abs(b - first) - Math.abs(a - first));
    for (const k of keys.slice(0, log.cache.size - CACHE_ROWS)) log.cache.delete(k);
  }

  function atBottom() {
    return box.scrollHeight - box.scrollTop - box.clientHeight < ROW_PX;
  }

  function toBottom() {
    spacer.style.height = `${viewRange().height}px`;
    box.scrollTop = box.scrollHeight;
  }

  function updateFilter() {
    const current = filter.value;
    const options = [h("option", null, `all types`)];
    options[0].value = "";
    for (const t of Object.keys(log.counts).sort()) {
      const o = h("option", null, `${t} (${log.counts[t]})`);
      o.value = t;
      options.push(o);
    }
    filter.replaceChildren(...options);
    filter.value = Object.prototype.hasOwnProperty.call(log.counts, current) ? current : "";
  }

  function onEvents(msg) {
    const follow = msg.reset || atBottom();
    const typesBefore = Object.keys(log.counts).join("\u0000");
    if (msg.reset) { log.cache = new Map(); log.asked = log.answered = null; }
    log.total = msg.total;
    log.counts = msg.counts || {};
    // The newest rows: their places in the filter are known from the end.
    const kind = filter.value;
    const rows = (msg.events || []).filter((r) => !kind || r.type === kind);
    const n = size();
    rows.forEach((r, k) => log.cache.set(kind ? n - rows.length + k : r.i, r));
    if (Object.keys(log.counts).join("\u0000") !== typesBefore) updateFilter();
    else for (const o of filter.options) if (o.value) o.textContent = `${o.value} (${log.counts[o.value] || 0})`;
    logCount.textContent = `Events (${log.total})`;
    root.dataset.events = String(log.total);
    if (follow) toBottom();
    trimCache(viewRange().first);
    schedule();
  }

  function onRows(msg) {
    if (msg.filter !== filter.value) return;  // asked before the filter changed
    if (log.asked && msg.req === log.asked.req) log.asked = null;
    log.answered = { filter: msg.filter, start: msg.start, total: log.total };
    msg.rows.forEach((r, k) => log.cache.set(msg.start + k, r));
    trimCache(viewRange().first);
    schedule();
  }

  box.addEventListener("scroll", schedule, { passive: true });
  const resized = new ResizeObserver(schedule);
  resized.observe(box);
  filter.addEventListener("change", () => {
    log.cache = new Map(); log.asked = log.answered = null;
    toBottom();
    schedule();
  });

  return {
    onEvents, onRows, schedule,
    dispose: () => { cancelAnimationFrame(painting); resized.disconnect(); },
  };
}

// The streamed rows in `box`: one per task and kind, the newest text last, bounded.
// Returns {onTokens, dispose}.
function createStreams({ root, box }) {
  const streamRows = new Map();  // row id -> {el, text, textEl, metaEl}
  let streamPaint = 0;
  const streamQueue = [];

  function onTokens(msg) {
    if (msg.reset) {
      for (const s of streamRows.values()) s.el.remove();
      streamRows.clear();
    }
    streamQueue.push(...(msg.rows || []));
    root.dataset.unshownStreams = String(msg.unshown || 0);
    if (!streamPaint) streamPaint = requestAnimationFrame(paintStreams);
  }

  function paintStreams() {
    streamPaint = 0;
    for (const d of streamQueue.splice(0)) {
      let s = streamRows.get(d.id);
      if (!s) {
        const el = h("div", "rv-stream-row");
        const metaEl = h("span", "rv-stream-meta");
        const textEl = h("span", "rv-stream-text");
        el.append(h("span", "rv-node", d.node), h("span", "rv-type", d.kind), metaEl, textEl);
        el.dataset.task = d.task;
        s = { el, metaEl, textEl, text: "" };
        streamRows.set(d.id, s);
        box.append(el);
      }
      s.text = ((d.reset ? "" : s.text) + d.append).slice(-STREAM_CHARS);
      const elided = d.chars - s.text.length;
      s.metaEl.textContent = `${d.items} emitted${elided > 0 ? ` · ${elided} earlier characters not shown` : ""}`;
      s.textEl.textContent = s.text;
      s.el.classList.toggle("is-done", !!d.done);
      s.el.dataset.items = String(d.items);
      s.el.dataset.chars = String(d.chars);
    }
    // Bounded: the oldest rows that ended go first.
    for (const [key, s] of streamRows) {
      if (streamRows.size <= STREAM_ROWS) break;
      if (s.el.classList.contains("is-done")) { s.el.remove(); streamRows.delete(key); }
    }
    box.hidden = streamRows.size === 0;
    root.dataset.streams = String(streamRows.size);
  }

  return { onTokens, dispose: () => cancelAnimationFrame(streamPaint) };
}
