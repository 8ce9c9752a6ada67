"""The drawing a live view lays out once: SVG from ``dot``, or DOT for the browser to lay out.

The workflow or machine is drawn bare (no overlay): the browser lights nodes and edges by
toggling classes on the SVG elements whose ids are listed here, so the layout never changes
while a run or an instance moves. Without the ``dot`` program the browser lays the DOT out
itself with Graphviz compiled to WebAssembly (:func:`agentnb.render.viz_js_path`), fetched
once per page through the widget's own channel — never from a CDN.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from agentnb.errors import MissingDependency, RenderError
from agentnb.graph.workflow import Workflow
from agentnb.render.assets import viz_js_path
from agentnb.render.dot import display_text, edge_dom_id, node_dom_id, to_dot
from agentnb.render.extract import diagram_from_graph, diagram_from_machine
from agentnb.render.model import Diagram, Edge
from agentnb.render.svg import render_svg

if TYPE_CHECKING:
    from agentnb.fsm import Statechart, StateMachine

__all__ = [
    "DRAWERS",
    "chart_drawing_payload",
    "diagram_payload",
    "drawing_payload",
    "id_prefix",
    "machine_drawing_payload",
    "viz_js_bytes",
]

DRAWERS = ("auto", "dot", "viz")
"""Who lays the drawing out: ``dot`` when installed, the ``dot`` program, or the browser."""


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


def drawing_payload(workflow: Workflow, drawer: str, model_id: str) -> dict[str, Any]:
    """The ``diagram`` message of a workflow (see :func:`diagram_payload`)."""
    diagram = diagram_from_graph(workflow, legend=True)
    return diagram_payload(diagram, drawer, id_prefix(model_id))


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
