"""Diagram IR -> DOT text, in one visual grammar, byte-for-byte deterministic.

The grammar: a small filled dot marks START and a double circle END; interrupt nodes are
amber octagons with a pause mark (``‖ name`` pauses before, ``name ‖`` after); plain edges
are solid, conditional edges dashed and labelled with the outcome when it is not the target's
name. A run's overlay lights the current node (blue), tints visited nodes (green), marks the
node awaiting approval (amber), the failed or rejected node (red), and draws taken edges
thicker with their count (``×2``). Colours are mid-tones and the background is transparent,
so a diagram reads on JupyterLab's light and dark themes alike.

Escaping: DOT node names are generated (``n0``, ``n1``, ...); user text only appears in
HTML-like labels (XML-escaped, backslashes doubled because Graphviz expands ``\\N``-style
escapes even there) and in SVG ids made of ``[A-Za-z0-9_-]`` plus ``%XX`` escapes.
Every node and edge carries an ``id`` and ``class`` that Graphviz copies into the SVG, so a
widget can restyle the drawing without laying it out again.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from agentnb.render.clusters import cluster_lines, cluster_names
from agentnb.render.model import Diagram, Edge, EdgeKind, Node, NodeKind, Overlay

__all__ = [
    "LEGEND_ID",
    "PAUSE_MARK",
    "cluster_names",
    "display_text",
    "dom_id",
    "dot_names",
    "edge_dom_id",
    "edge_text",
    "node_dom_id",
    "node_text",
    "to_dot",
]

PAUSE_MARK = "‖"
"""Drawn beside interrupt nodes. Not U+23F8 (⏸): common fonts (DejaVu, Liberation) lack it."""
LEGEND_ID = "agentnb-legend"
"""SVG id of the legend node."""

FONT = "Helvetica"  # viz.js has metrics for it; SVG falls back to sans-serif
INK = "#6b7785"  # lines and free-standing text: mid-grey reads on white and on near-black
TEXT = "#1d2733"  # text inside filled shapes, whose fills are light on both themes

# kind/state -> (fill, border, font colour)
_LOOK: dict[str, tuple[str, str, str]] = {
    "normal": ("#e6edf5", "#5f7691", TEXT),
    "interrupt": ("#fbe7c0", "#b7791f", TEXT),
    "missing": ("none", INK, INK),
    "visited": ("#d3ecd9", "#3c8d55", TEXT),
    "current": ("#3b7dd8", "#1f5fae", "#ffffff"),
    "pending": ("#f4b740", "#a86b00", TEXT),
    "failed": ("#d9534f", "#9b2c2c", "#ffffff"),
    "rejected": ("#f2c4c2", "#9b2c2c", TEXT),
    "completed": ("#2e9a55", "#2e9a55", "#ffffff"),
}
_TAKEN = "#3b7dd8"
_TAKEN_DONE = "#2e9a55"

_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")
# Drawn as escapes: controls, format characters (zero-width, bidi overrides: they could make
# one name look like another), line separators, surrogates and unassigned code points —
# several of them are not even valid XML, and Graphviz silently drops others.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Cn"})


def display_text(text: str) -> str:
    """``text`` as drawn: newlines kept, invisible characters spelled out (``\\x07``, ``\\u200b``).

    Example:
        >>> display_text("a\\tb\\u200b")
        'a\\\\x09b\\\\u200b'
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch != "\n" and unicodedata.category(ch) in _HIDDEN:
            code = ord(ch)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            else:
                out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def _html(text: str) -> str:
    """Body of an HTML-like label that draws ``text`` literally, one line per ``\\n``."""
    lines = display_text(text).split("\n")
    return "<BR/>".join(
        line.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("]", "&#93;")  # Graphviz 2.43 rejects a label that starts with "]"
        .replace("\\", "\\\\")  # Graphviz turns \N, \G ... into names, and \\ into \
        for line in lines
    )


def _percent(match: re.Match[str]) -> str:
    return "".join(f"%{b:02X}" for b in match.group().encode("utf-8", "surrogatepass"))


def dom_id(name: str) -> str:
    """``name`` made safe for an SVG id: ``[A-Za-z0-9_-]`` kept, the rest ``%XX`` (UTF-8).

    Reversible with JavaScript's ``decodeURIComponent``.

    Example:
        >>> dom_id("human approval?")
        'human%20approval%3F'
    """
    return _UNSAFE_ID.sub(_percent, name)


def node_dom_id(node_id: str, prefix: str = "") -> str:
    """SVG id of a node: ``node-<dom_id(name)>``."""
    return f"{prefix}node-{dom_id(node_id)}"


def edge_dom_id(edge: Edge, prefix: str = "") -> str:
    """SVG id of an edge: ``edge-<source>~<target>`` (``~<key>`` appended for parallel edges)."""
    key = f"~{dom_id(edge.key)}" if edge.key else ""
    return f"{prefix}edge-{dom_id(edge.source)}~{dom_id(edge.target)}{key}"


def dot_names(diagram: Diagram) -> dict[str, str]:
    """Node id -> its generated DOT name (``n0``, ``n1``, ... in diagram order)."""
    return {node.id: f"n{i}" for i, node in enumerate(diagram.nodes)}


def node_text(node: Node) -> str:
    """The text drawn inside a node (before :func:`display_text`): its label and pause marks."""
    if node.kind in (NodeKind.START, NodeKind.END):
        return ""
    before = f"{PAUSE_MARK} " if node.pause_before else ""
    after = f" {PAUSE_MARK}" if node.pause_after else ""
    return f"{before}{node.label}{after}"


def edge_text(edge: Edge, overlay: Overlay | None) -> str | None:
    """The text drawn on an edge: its label and guard, then ``×n`` if a run took it."""
    return _edge_text(edge, overlay.count(edge.source, edge.target) if overlay else 0)


def _edge_text(edge: Edge, count: int) -> str | None:
    parts = [t for t in (edge.text, f"×{count}" if count else None) if t]
    return " ".join(parts) or None


def _attrs(pairs: list[tuple[str, str]]) -> str:
    return ", ".join(f"{k}={v}" for k, v in pairs)


def _q(value: str) -> str:
    # Only our own constants and ids reach quoted strings; user text goes through _html.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Lit:
    """An overlay indexed for drawing: set and dict lookups instead of tuple scans."""

    __slots__ = ("active", "counts", "keyed", "overlay", "visited")

    def __init__(self, overlay: Overlay) -> None:
        self.overlay = overlay
        self.active = frozenset(overlay.active)
        self.visited = frozenset(overlay.visited)
        self.counts = {(s, t): n for s, t, n in overlay.traversed}
        self.keyed = {(s, t, k): n for s, t, k, n in overlay.keyed}

    def taken(self, edge: Edge) -> int:
        """How often ``edge`` was taken; parallel edges apart when the overlay is keyed."""
        if self.keyed and edge.key is not None:
            return self.keyed.get((edge.source, edge.target, edge.key), 0)
        return self.counts.get((edge.source, edge.target), 0)

    def is_last(self, edge: Edge) -> bool:
        overlay = self.overlay
        if overlay.last != (edge.source, edge.target):
            return False
        return overlay.last_key is None or edge.key is None or overlay.last_key == edge.key


def _node_state(node: Node, lit: _Lit | None) -> list[str]:
    """Overlay states of a node, most important first."""
    if lit is None:
        return []
    overlay = lit.overlay
    states = []
    if node.id == overlay.failed:
        states.append("failed")
    if node.id == overlay.rejected:
        states.append("rejected")
    if node.id == overlay.pending:
        states.append("pending")
    if node.id == overlay.current or node.id in lit.active:
        states.append("current")
    if node.id in lit.visited:
        states.append("visited")
    if node.kind is NodeKind.END and overlay.completed:
        states.append("completed")
    return states


def _look(node: Node, lit: _Lit | None) -> str | None:
    """The overlay state that colours a node (markers keep their own colours), if any."""
    if node.kind in (NodeKind.START, NodeKind.END):
        return None
    states = _node_state(node, lit)
    return states[0] if states else None


def _node_line(node: Node, name: str, lit: _Lit | None, prefix: str) -> str:
    states = _node_state(node, lit)
    classes = ["agentnb-node", *(f"kind-{k.replace('_', '-')}" for k in node.kinds)]
    classes += [f"is-{s}" for s in states]
    attrs = [("id", _q(node_dom_id(node.id, prefix))), ("class", _q(" ".join(classes)))]
    if node.kind is NodeKind.ANCHOR:
        attrs += [("shape", "point"), ("width", "0.01"), ("style", "invis"), ("label", '""')]
        return f"  {name} [{_attrs(attrs)}];"
    if node.kind is NodeKind.INITIAL:
        attrs += [("shape", "circle"), ("width", "0.14"), ("fixedsize", "true")]
        attrs += [("style", "filled"), ("fillcolor", _q(INK)), ("color", _q(INK)), ("label", '""')]
        return f"  {name} [{_attrs(attrs)}];"
    if node.kind is NodeKind.HISTORY:
        fill, border, font = _LOOK[states[0] if states and states[0] != "visited" else "normal"]
        attrs += [("shape", "circle"), ("width", "0.3"), ("fixedsize", "true")]
        attrs += [("style", "filled"), ("fillcolor", _q(fill)), ("color", _q(border))]
        attrs += [("fontcolor", _q(font)), ("label", f"<{_html(node.label)}>")]
        return f"  {name} [{_attrs(attrs)}];"
    if node.kind in (NodeKind.START, NodeKind.END):
        fill = _LOOK[states[0]][0] if states and states[0] != "visited" else INK
        if node.kind is NodeKind.END and "completed" in states:
            fill = _LOOK["completed"][0]
        shape, width = (
            ("circle", "0.2") if node.kind is NodeKind.START else ("doublecircle", "0.16")
        )
        attrs += [
            ("shape", shape),
            ("width", width),
            ("fixedsize", "true"),
            ("style", "filled"),
            ("fillcolor", _q(fill)),
            ("color", _q(fill)),
            ("label", '""'),
        ]
        return f"  {name} [{_attrs(attrs)}];"
    base = "missing" if node.kind is NodeKind.MISSING else "normal"
    if node.interrupt:
        base = "interrupt"
    look = states[0] if states else base
    fill, border, font = _LOOK[look]
    style = ["filled"] if fill != "none" else []
    if node.kind is NodeKind.MISSING:
        style.append("dashed")
    if not node.interrupt:
        style.append("rounded")
    attrs += [
        ("shape", "octagon" if node.interrupt else "box"),
        ("style", _q(",".join(style))),
        ("fillcolor", _q(fill)),
        ("color", _q(border)),
        ("fontcolor", _q(font)),
    ]
    if node.interrupt:
        attrs.append(("margin", '"0.02,0.05"'))  # an octagon grows wide around its label
    if node.kind is NodeKind.FINAL:
        attrs.append(("peripheries", "2"))
    if states and states[0] != "visited":
        attrs.append(("penwidth", "2.4"))
    elif node.entry:
        attrs.append(("penwidth", "1.8"))
    attrs.append(("label", f"<{_html(node_text(node))}>"))
    return f"  {name} [{_attrs(attrs)}];"


def _returns(edges: Sequence[Edge]) -> frozenset[int]:
    """The positions of the edges that leave a compound state by its box (``ltail``).

    They are drawn from the box's initial dot, the node every way *in* ends at, so each way
    out to a state that also leads in makes a two-node cycle with it; when Graphviz ranks a
    way out first, the way in (``idle → cooking``) is clipped to a stub at the box and its
    label (``start [In('closed')]``) lands inside the box, beside the initial dot's own arrow
    to ``heating``. Ways out therefore do not rank: the ways in and the inner arrows do.
    """
    return frozenset(i for i, e in enumerate(edges) if e.tail_cluster is not None)


def _edge_line(
    edge: Edge,
    names: dict[str, str],
    lit: _Lit | None,
    prefix: str,
    clusters: dict[str, str] | None = None,
    ranks: bool = True,
) -> str:
    classes = ["agentnb-edge", f"kind-{edge.kind.value}"]
    if edge.implicit:
        classes.append("implicit")
    attrs: list[tuple[str, str]] = [("id", _q(edge_dom_id(edge, prefix)))]
    taken = lit.taken(edge) if lit else 0
    if lit and taken:
        classes.append("is-traversed")
        colour = _TAKEN_DONE if lit.overlay.completed else _TAKEN
        attrs += [("color", _q(colour)), ("fontcolor", _q(colour)), ("penwidth", "2.2")]
    if lit and lit.is_last(edge):
        classes.append("is-last")
    attrs.insert(1, ("class", _q(" ".join(classes))))
    if edge.kind is EdgeKind.CONDITIONAL:
        attrs.append(("style", "dashed"))
    text = _edge_text(edge, taken)
    if text is not None:
        attrs.append(("label", f"<{_html(text)}>"))
    if clusters:
        if edge.tail_cluster in clusters:
            attrs.append(("ltail", clusters[edge.tail_cluster]))
        if edge.head_cluster in clusters:
            attrs.append(("lhead", clusters[edge.head_cluster]))
    if not ranks:
        attrs.append(("constraint", "false"))
    return f"  {names[edge.source]} -> {names[edge.target]} [{_attrs(attrs)}];"


def _legend_rows(diagram: Diagram, lit: _Lit | None) -> list[tuple[str, str, str, str]]:
    """(fill, border, font colour, text) for each kind that appears in the diagram."""
    nodes, edges = diagram.nodes, diagram.edges
    rows: list[tuple[str, str, str, str]] = []

    def add(look: str, text: str) -> None:
        rows.append((*_LOOK[look], text))

    if any(n.pause_before for n in nodes):
        add("interrupt", f"{PAUSE_MARK} approval before")
    if any(n.pause_after for n in nodes):
        add("interrupt", f"approval after {PAUSE_MARK}")
    if any(n.kind is NodeKind.MISSING for n in nodes):
        add("missing", "not defined yet")
    if any(e.kind is EdgeKind.CONDITIONAL for e in edges):
        rows.append(("none", "none", INK, "╌╌▸ conditional"))
    if lit is not None:
        looks = {_look(n, lit) for n in nodes}
        for state, text in (
            ("current", "current"),
            ("visited", "visited"),
            ("pending", "awaiting approval"),
            ("failed", "failed"),
            ("rejected", "rejected"),
        ):
            if state in looks:
                add(state, text)
        if lit.counts:
            colour = _TAKEN_DONE if lit.overlay.completed else _TAKEN
            rows.append(("none", "none", colour, "━━▸ taken ×n"))
    return rows


def _legend_line(diagram: Diagram, lit: _Lit | None, prefix: str) -> str | None:
    rows = _legend_rows(diagram, lit)
    if not rows:
        return None
    cells = "".join(
        f'<TR><TD BGCOLOR="{fill}" COLOR="{border}" BORDER="{0 if border == "none" else 1}">'
        f'<FONT COLOR="{font}">{_html(text)}</FONT></TD></TR>'
        for fill, border, font, text in rows
    )
    table = f'<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="3" CELLPADDING="3">{cells}</TABLE>'
    attrs = [
        ("id", _q(prefix + LEGEND_ID)),
        ("class", '"agentnb-legend"'),
        ("shape", "plaintext"),
        ("fontsize", "10"),
        ("label", f"<{table}>"),
    ]
    return f"  legend [{_attrs(attrs)}];"


def to_dot(diagram: Diagram, *, id_prefix: str = "") -> str:
    """The DOT text of a diagram; the same diagram always gives the same bytes.

    Args:
        diagram: what to draw.
        id_prefix: prepended to every SVG id, for pages showing several diagrams inline.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = (
        ...     StateGraph("refund")
        ...     .add_node("plan", lambda state: {})
        ...     .add_node("pay", lambda state: {})
        ...     .add_edge("plan", "pay")
        ...     .set_entry_point("plan")
        ...     .add_interrupt_before("pay")
        ... )
        >>> from agentnb.render import diagram_for, to_dot
        >>> dot = to_dot(diagram_for(graph))
        >>> dot.splitlines()[0]
        'digraph agentnb {'
        >>> dot == to_dot(diagram_for(graph))  # the same diagram, the same bytes
        True
    """
    names = dot_names(diagram)
    overlay = diagram.overlay
    classes = "agentnb-diagram" + (f" run-{overlay.status}" if overlay and overlay.status else "")
    graph = [
        ("id", _q(f"{id_prefix}agentnb-graph")),
        ("class", _q(classes)),
        ("rankdir", diagram.direction),
        ("bgcolor", "transparent"),
        ("pad", "0.15"),
        ("nodesep", "0.3"),
        ("ranksep", "0.4"),
        ("fontname", _q(FONT)),
        ("fontsize", "13"),
        ("fontcolor", _q(INK)),
    ]
    if diagram.title:
        graph += [("labelloc", "t"), ("labeljust", "l"), ("label", f"<{_html(diagram.title)}>")]
    if diagram.clusters:
        graph.append(("compound", "true"))
    lines = [
        "digraph agentnb {",
        f"  graph [{_attrs(graph)}];",
        f'  node [fontname={_q(FONT)}, fontsize=11, height=0.34, margin="0.12,0.05", '
        "penwidth=1.2];",
        f"  edge [fontname={_q(FONT)}, fontsize=9, color={_q(INK)}, fontcolor={_q(INK)}, "
        "arrowsize=0.7, penwidth=1.2];",
    ]
    lit = _Lit(overlay) if overlay is not None else None
    if diagram.clusters:
        active = lit.active if lit is not None else frozenset()
        lines += cluster_lines(
            diagram,
            lambda n: _node_line(n, names[n.id], lit, id_prefix),
            active,
            id_prefix,
            html=_html,
            dom_id=dom_id,
        )
    else:
        lines += [_node_line(node, names[node.id], lit, id_prefix) for node in diagram.nodes]
    subgraphs = cluster_names(diagram)
    returns = _returns(diagram.edges) if subgraphs else frozenset()
    lines += [
        _edge_line(edge, names, lit, id_prefix, subgraphs, ranks=i not in returns)
        for i, edge in enumerate(diagram.edges)
    ]
    legend = _legend_line(diagram, lit, id_prefix) if diagram.legend else None
    if legend is not None:
        lines.append(legend)
    lines.append("}")
    return "\n".join(lines) + "\n"
