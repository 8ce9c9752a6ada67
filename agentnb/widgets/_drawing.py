"""The drawing a live view lays out once: SVG from ``dot``, or DOT for the browser to lay out.

The workflow is drawn bare (no run overlay): the browser lights nodes and edges by toggling
classes on the SVG elements whose ids are listed here, so the layout never changes while a
run moves. Without the ``dot`` program the browser lays the DOT out itself with Graphviz
compiled to WebAssembly (:func:`agentnb.render.viz_js_path`), fetched once per page through
the widget's own channel — never from a CDN.
"""

from __future__ import annotations

import functools
from typing import Any

from agentnb.errors import MissingDependency, RenderError
from agentnb.graph.workflow import Workflow
from agentnb.render.assets import viz_js_path
from agentnb.render.dot import display_text, edge_dom_id, node_dom_id, to_dot
from agentnb.render.extract import diagram_from_graph
from agentnb.render.svg import render_svg

__all__ = ["DRAWERS", "drawing_payload", "id_prefix", "viz_js_bytes"]

DRAWERS = ("auto", "dot", "viz")
"""Who lays the drawing out: ``dot`` when installed, the ``dot`` program, or the browser."""


def id_prefix(model_id: str) -> str:
    """SVG id prefix for one widget, so two drawings on a page never share an id."""
    return f"rv{model_id[:8]}-"


@functools.cache
def viz_js_bytes() -> bytes:
    """The Viz.js ES module (1.19 MB), read once per process."""
    return viz_js_path().read_bytes()


def drawing_payload(workflow: Workflow, drawer: str, model_id: str) -> dict[str, Any]:
    """The ``diagram`` message: SVG or DOT, plus the element ids of every node and edge.

    Args:
        workflow: what to draw.
        drawer: one of :data:`DRAWERS`.
        model_id: the widget's id (makes the SVG ids unique on the page).

    Returns:
        ``{"kind": "diagram", "mode": "svg", "svg": ...}`` or ``{"mode": "dot", "dot": ...}``,
        with ``nodes`` (element id -> node name), ``edges`` (element id -> [source, target]),
        ``titles`` (element id -> hover text) and ``note`` (why the browser lays it out).
    """
    prefix = id_prefix(model_id)
    diagram = diagram_from_graph(workflow, legend=True)
    nodes = {node_dom_id(n.id, prefix): n.id for n in diagram.nodes}
    edges = {edge_dom_id(e, prefix): [e.source, e.target] for e in diagram.edges}
    titles = {
        node_dom_id(n.id, prefix): display_text(
            n.id if not n.description else f"{n.id}\n{n.description}"
        )
        for n in diagram.nodes
    }
    titles.update(
        {edge_dom_id(e, prefix): display_text(f"{e.source} → {e.target}") for e in diagram.edges}
    )
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
