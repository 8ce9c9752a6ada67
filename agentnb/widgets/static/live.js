// agentnb live views: helpers shared by run_view.js and machine_view.js.
//
// An anywidget module is sent to the browser as one text and cannot import its neighbours,
// so agentnb.widgets._live.static_text puts this file in front of each view's own file.
// It declares functions and constants only (no export): each view's file ends with its own
// `export default { render }`.
//
// Rules kept here for every view:
// - User data (names, states, contexts, comments) is only ever set with textContent or as
//   attribute values, never parsed as HTML. SVG (from Python, or laid out by viz.js) is
//   parsed as data and scrubbed with the allow-list agentnb.render.svg.SVG_ALLOW — the one
//   Python checks with — sent as the widget's `_svg_allow` trait: every element and
//   attribute it does not name is removed before the drawing is inserted.
// - A drawing is laid out once; progress toggles classes on its SVG elements.
// - Graphviz-in-WebAssembly (viz.js, 1.2 MB) is fetched from the kernel once per page and
//   cached on globalThis, whichever view asked first.

const VIZ_SLOT = "__agentnb_viz";
const TREE_CHILDREN = 200; // children shown per branch of a tree

function h(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined && text !== null) el.textContent = String(text);
  return el;
}

function button(label, className, title) {
  const b = h("button", className, label);
  b.type = "button";
  if (title) b.title = title;
  return b;
}

// The panel's header — title, status badge, where it stands — and its alert and notice
// lines, with class names under the panel's prefix (``rv`` or ``mv``).
function panelHeader(ns, badgeClass) {
  const head = h("div", `${ns}-head`);
  const title = h("span", `${ns}-title`);
  const badge = h("span", `${ns}-${badgeClass}`);
  const where = h("span", `${ns}-where`);
  head.append(title, badge, where);
  const errorBox = h("div", `${ns}-error`);
  errorBox.setAttribute("role", "alert");
  const noticeBox = h("div", `${ns}-notice`);
  noticeBox.setAttribute("aria-live", "polite");
  return { head, title, badge, where, errorBox, noticeBox };
}

// The panel's alert (an error) and notice lines: shown as text, hidden when empty.
function showMessages(errorBox, noticeBox, error, notice) {
  errorBox.textContent = error || "";
  errorBox.hidden = !error;
  noticeBox.textContent = notice || "";
  noticeBox.hidden = !notice;
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

function viewId() {
  return `v${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
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

const XMLNS = "http://www.w3.org/2000/xmlns/";
const SCRIPTY = /(?:java|vb)script:/;

// Remove from `root` (an <svg>) every element and attribute `allow` does not name; a link
// attribute must point inside the drawing. Without a list, nothing but the root is kept.
function scrub(root, allow) {
  const elements = new Set((allow && allow.elements) || []);
  const attributes = new Set((allow && allow.attributes) || []);
  const links = new Set((allow && allow.links) || []);
  if (root.localName.toLowerCase() !== "svg") throw new Error("the drawing is not an <svg>");
  for (const el of [...root.querySelectorAll("*")]) {
    if (!elements.has(el.localName.toLowerCase())) el.remove(); // with everything inside it
  }
  for (const el of [root, ...root.querySelectorAll("*")]) {
    for (const attr of [...el.attributes]) {
      if (attr.namespaceURI === XMLNS) continue; // a namespace declaration does nothing
      const name = attr.localName.toLowerCase(); // xlink:href is "href"
      // What a browser ignores in a URL (whitespace, controls) cannot hide "javascript:".
      const flat = attr.value.replace(/[\s\u0000-\u001f]+/g, "").toLowerCase();
      const ok = attributes.has(name) && !SCRIPTY.test(flat) &&
        (!links.has(name) || attr.value.startsWith("#"));
      if (!ok) el.removeAttributeNode(attr);
    }
  }
  return root;
}

function parseSvg(text, allow) {
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const root = doc.documentElement;
  if (!root || root.localName !== "svg" || doc.getElementsByTagName("parsererror").length) {
    throw new Error("the drawing is not valid SVG");
  }
  // Scrubbed while still in the parser's inert document, before it meets this page.
  return document.importNode(scrub(root, allow), true);
}

// -- the drawing: laid out once, lit by classes ---------------------------------------------

// A drawing inside `box`, shown from a `diagram` message (SVG from dot, or DOT laid out by
// viz.js). `nodes` maps a node's name to its <g> elements; `edges` lists {source, target,
// key, g}. `show` may be called again (a new definition): the new drawing replaces the old.
// Classes are prefixed with `ns` ("rv", "mv"); `root.dataset.drawn` says a drawing is shown.
function createDrawing({ model, root, box, ns, onShown, onError }) {
  const note = h("div", `${ns}-drawing-note`, "drawing…");
  box.append(note);
  const drawing = { nodes: new Map(), edges: [], disposed: false };

  function index(svg, msg) {
    drawing.nodes = new Map();
    drawing.edges = [];
    const own = (map, id) => Object.prototype.hasOwnProperty.call(map, id);
    for (const g of svg.querySelectorAll("g[id]")) {
      const id = g.getAttribute("id");
      if (own(msg.nodes, id)) {
        const name = msg.nodes[id];
        g.dataset.name = name; // an attribute value, never markup
        if (!drawing.nodes.has(name)) drawing.nodes.set(name, []);
        drawing.nodes.get(name).push(g);
      } else if (own(msg.edges, id)) {
        const [source, target, key] = msg.edges[id];
        drawing.edges.push({ source, target, key: key || "", g });
      }
      if (own(msg.titles, id)) {
        const t = g.querySelector(":scope > title");
        if (t) t.textContent = msg.titles[id];
      }
    }
  }

  function place(svg, msg) {
    svg.classList.add(`${ns}-svg`); // natural size, shrunk to fit (CSS), never blown up
    index(svg, msg);
    box.replaceChildren(svg);
    if (msg.note) box.append(h("div", `${ns}-drawing-note`, msg.note));
    onShown(msg);
  }

  drawing.show = async (msg) => {
    try {
      const allow = model.get("_svg_allow");
      if (msg.mode === "svg") {
        place(parseSvg(msg.svg, allow), msg);
      } else {
        note.textContent = "laying out in the browser…";
        const viz = await requestViz(model);
        if (drawing.disposed) return;
        place(scrub(viz.renderSVGElement(msg.dot), allow), msg);
        root.dataset.drawer = "viz";
      }
      root.dataset.drawn = "true";
    } catch (err) {
      note.textContent = "The drawing could not be shown.";
      if (!note.isConnected) box.append(note);
      onError(`Drawing failed: ${err && err.message ? err.message : err}`);
    }
  };
  return drawing;
}

// -- a JSON value as a tree of <details> ----------------------------------------------------

function leafText(value) {
  return typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value));
}

// What a collapsed collection says of itself: its size in words, never a bare `[0]` (which
// reads as a list holding 0). An empty one is a leaf written as JSON: `[]`, `{}`.
function collectionMeta(value) {
  const n = Array.isArray(value) ? value.length : Object.keys(value).length;
  const unit = Array.isArray(value) ? (n === 1 ? "item" : "items") : (n === 1 ? "key" : "keys");
  return Array.isArray(value) ? `[${n} ${unit}]` : `{${n} ${unit}}`;
}

function isEmptyCollection(value) {
  return value !== null && typeof value === "object" && Object.keys(value).length === 0;
}

function treeNode(key, value, path, open, changed, ns) {
  const isObject = value !== null && typeof value === "object";
  const item = h("div", `${ns}-tree-item`);
  if (changed) item.classList.add("is-changed");
  if (!isObject || isEmptyCollection(value)) {
    const kind = value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
    item.classList.add(`${ns}-leaf`);
    item.append(h("span", `${ns}-key`, key), h("span", `${ns}-val ${ns}-${kind}`, leafText(value)));
    return item;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const details = h("details", `${ns}-branch`);
  const summary = h("summary");
  summary.append(h("span", `${ns}-key`, key), h("span", `${ns}-meta`, collectionMeta(value)));
  details.append(summary);
  let filled = false;
  const fill = () => {
    if (filled) return;
    filled = true;
    const box = h("div", `${ns}-children`);
    for (const [k, v] of entries.slice(0, TREE_CHILDREN)) box.append(treeNode(k, v, `${path}/${k}`, open, false, ns));
    if (entries.length > TREE_CHILDREN) box.append(h("div", `${ns}-more`, `… ${entries.length - TREE_CHILDREN} more`));
    details.append(box);
  };
  // Children are built when first opened: a big value costs nothing until someone looks.
  details.addEventListener("toggle", () => {
    if (details.open) { fill(); open.set(path, true); } else { open.set(path, false); }
  });
  const wantOpen = open.has(path) ? open.get(path) : entries.length <= 12 && path.split("/").length <= 2;
  if (wantOpen) { fill(); details.open = true; }
  item.append(details);
  return item;
}

// `open` remembers which branches the person opened or closed, across re-renders.
function renderTree(box, value, changed, open, ns, emptyText) {
  const keep = box.scrollTop;
  const changedKeys = new Set(changed || []);
  const root = h("div", `${ns}-tree-root`);
  const entries = Object.entries(value || {});
  if (!entries.length) root.append(h("div", `${ns}-empty`, emptyText));
  for (const [k, v] of entries) root.append(treeNode(k, v, `/${k}`, open, changedKeys.has(k), ns));
  box.replaceChildren(root);
  box.scrollTop = keep;
}
