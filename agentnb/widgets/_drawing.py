"""The drawing a live view lays out once: SVG from ``dot``, or DOT for the browser to lay out.

The workflow or machine is drawn bare (no overlay): the browser lights nodes and edges by
toggling classes on the SVG elements whose ids are listed here, so the layout never changes
while a run or an instance moves. Without the ``dot`` program the browser lays the DOT out
itself with Graphviz compiled to WebAssembly (:func:`agentnb.render.viz_js_path`), fetched
once per page through the widget's own channel — never from a CDN.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from agentnb.errors import MissingDependency, RenderError
from agentnb.graph.workflow import Workflow
from agentnb.render.assets import viz_js_path
from agentnb.render.dot import display_text, edge_dom_id, node_dom_id, to_dot
from agentnb.render.extract import diagram_from_graph, diagram_from_machine
from agentnb.render.model import Diagram, Edge, Node
from agentnb.render.svg import render_svg

if TYPE_CHECKING:
    from agentnb.fsm import Statechart, StateMachine

__all__ = [
    "DRAWERS",
    "SUBGRAPH",
    "chart_drawing_payload",
    "collapse",
    "diagram_payload",
    "drawing_payload",
    "id_prefix",
    "machine_drawing_payload",
    "viz_js_bytes",
]

DRAWERS = ("auto", "dot", "viz")
"""Who lays the drawing out: ``dot`` when installed, the ``dot`` program, or the browser."""
SUBGRAPH = ":subgraph"
"""How the cluster of subgraph node ``n`` is named (``n:subgraph``, render.extract)."""


def id_prefix(model_id: str, kind: str = "rv") -> str:
    """SVG id prefix for one widget, so two drawings on a page never share an id."""
    return f"{kind}{model_id[:8]}-"


@functools.cache
def viz_js_bytes() -> bytes:
    """The Viz.js ES module (1.19 MB), read once per process."""
    return viz_js_path().read_bytes()


def _arrow(edge: Edge) -> str:
    return f"{edge.source} → {edge.target}"


def _transition(edge: Edge) -> str:
    return f"{edge.source} --{edge.text}--> {edge.target}" if edge.text else _arrow(edge)


def diagram_payload(
    diagram: Diagram, drawer: str, prefix: str, *, edge_titles: bool = False
) -> dict[str, Any]:
    """The ``diagram`` message for any diagram: SVG or DOT, plus every element's id.

    Args:
        diagram: what to draw (without an overlay: the browser lights it).
        drawer: one of :data:`DRAWERS`.
        prefix: prepended to the SVG ids (see :func:`id_prefix`).
        edge_titles: hover text on edges says their label (``a --timer--> b``), not only
            where they go.

    Returns:
        ``{"kind": "diagram", "mode": "svg", "svg": ...}`` or ``{"mode": "dot", "dot": ...}``,
        with ``nodes`` (element id -> node name), ``edges`` (element id -> [source, target,
        key]), ``titles`` (element id -> hover text) and ``note`` (why the browser lays it
        out).
    """
    nodes = {node_dom_id(n.id, prefix): n.id for n in diagram.nodes}
    # A statechart's compound states are clusters: lit by the same class toggles as nodes.
    nodes.update({node_dom_id(c.id, prefix): c.id for c in diagram.clusters})
    edges = {edge_dom_id(e, prefix): [e.source, e.target, e.key] for e in diagram.edges}
    titles = {
        node_dom_id(n.id, prefix): display_text(
            n.id if not n.description else f"{n.id}\n{n.description}"
        )
        for n in diagram.nodes
    }
    titles.update({node_dom_id(c.id, prefix): display_text(c.id) for c in diagram.clusters})
    describe = _transition if edge_titles else _arrow
    titles.update({edge_dom_id(e, prefix): display_text(describe(e)) for e in diagram.edges})
    payload: dict[str, Any] = {"kind": "diagram", "nodes": nodes, "edges": edges, "titles": titles}
    note = ""
    if drawer in ("auto", "dot"):
        try:
            svg = render_svg(diagram, id_prefix=prefix)
        except MissingDependency:
            if drawer == "dot":
                note = "Graphviz's dot is not installed: drawn in the browser instead."
        except RenderError as exc:
            note = f"Graphviz failed ({exc}): drawn in the browser instead."
        else:
            return {**payload, "mode": "svg", "svg": svg, "note": ""}
    return {**payload, "mode": "dot", "dot": to_dot(diagram, id_prefix=prefix), "note": note}


def _anchor(cluster_id: str) -> str:
    return cluster_id.removesuffix(SUBGRAPH)


def collapse(diagram: Diagram, clusters: Collection[str]) -> Diagram:
    """``diagram`` with each subgraph cluster in ``clusters`` drawn as its node alone.

    The subgraph's node stays where the parent's edges meet it, labelled with how many
    nodes it holds; everything inside the box (nested boxes too) and the edges touching
    it go. Unknown ids and clusters that are not subgraphs are ignored.

    Example:
        >>> from agentnb.graph.builder import END, StateGraph
        >>> inner = StateGraph("inner").add_node("x", lambda s: None).set_entry_point("x")
        >>> g = StateGraph("outer").add_node("sub", inner).set_entry_point("sub")
        >>> d = collapse(diagram_from_graph(g), ["sub:subgraph"])
        >>> [n.label for n in d.nodes if n.id == "sub"], d.clusters
        (['sub ⊞ 1 inside'], ())
    """
    parents = {c.id: c.parent for c in diagram.clusters}

    def inside(cluster: str | None, folded: set[str]) -> str | None:
        """The outermost folded cluster holding ``cluster`` (itself included), if any."""
        found = None
        while cluster is not None:
            if cluster in folded:
                found = cluster
            cluster = parents.get(cluster)
        return found

    folded = {c for c in clusters if c in parents and c.endswith(SUBGRAPH)}
    if not folded:
        return diagram
    anchors = {_anchor(c): c for c in folded if inside(parents[c], folded) is None}
    held: dict[str, int] = dict.fromkeys(anchors.values(), 0)
    nodes: list[Node] = []
    for node in diagram.nodes:
        box = inside(node.cluster, folded)
        if node.id in anchors:
            nodes.append(node)  # relabelled below, once its box is counted
        elif box is None:
            nodes.append(node)
        else:
            held[box] += 1
    kept = {n.id for n in nodes}
    nodes = [
        dataclasses.replace(
            n,
            label=f"{n.label} ⊞ {held[anchors[n.id]]} inside",
            cluster=parents[anchors[n.id]],
        )
        if n.id in anchors
        else n
        for n in nodes
    ]
    edges = tuple(
        dataclasses.replace(
            e,
            tail_cluster=None if inside(e.tail_cluster, folded) else e.tail_cluster,
            head_cluster=None if inside(e.head_cluster, folded) else e.head_cluster,
        )
        for e in diagram.edges
        if e.source in kept and e.target in kept
    )
    return dataclasses.replace(
        diagram,
        nodes=tuple(nodes),
        edges=edges,
        clusters=tuple(c for c in diagram.clusters if inside(c.id, folded) is None),
    )


def drawing_payload(
    workflow: Workflow,
    drawer: str,
    model_id: str,
    collapsed: Collection[str] = (),
    whole: Diagram | None = None,
) -> dict[str, Any]:
    """The ``diagram`` message of a workflow (see :func:`diagram_payload`).

    With ``collapsed``, those subgraph clusters are drawn as their node alone
    (:func:`collapse`). Either way the message says which clusters can be collapsed
    (``collapsible``: element id -> cluster id) and which are (``collapsed``: the element
    id of each folded subgraph's node -> its cluster id), so the browser can fold and
    unfold them and light a folded node for what runs inside it. ``whole`` is drawn
    instead of the workflow's own diagram when given (a graph from another runtime).
    """
    if whole is None:
        whole = diagram_from_graph(workflow, legend=True)
    prefix = id_prefix(model_id)
    diagram = collapse(whole, collapsed)
    payload = diagram_payload(diagram, drawer, prefix)
    drawn = {c.id for c in diagram.clusters}
    payload["collapsible"] = {
        node_dom_id(c.id, prefix): c.id
        for c in whole.clusters
        if c.id.endswith(SUBGRAPH)
        if c.id in drawn
    }
    folded = {c.id for c in whole.clusters} - drawn
    payload["collapsed"] = {
        node_dom_id(_anchor(c), prefix): c
        for c in sorted(folded)
        if any(n.id == _anchor(c) for n in diagram.nodes)
    }
    return payload


def machine_drawing_payload(machine: StateMachine, drawer: str, model_id: str) -> dict[str, Any]:
    """The ``diagram`` message of a state machine's transition table.

    Parallel transitions between two states are separate edges (``edges`` values carry
    their key, the event name), so the browser can light the one an instance took.
    """
    diagram = diagram_from_machine(machine)
    return diagram_payload(diagram, drawer, id_prefix(model_id, "mv"), edge_titles=True)


def chart_drawing_payload(chart: Statechart, drawer: str, model_id: str) -> dict[str, Any]:
    """The ``diagram`` message of a statechart: its states as nested clusters."""
    from agentnb.render.extract_chart import diagram_from_chart

    return diagram_payload(
        diagram_from_chart(chart, legend=False), drawer, id_prefix(model_id, "mv"), edge_titles=True
    )
