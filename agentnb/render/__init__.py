"""Diagrams: workflow, machine or run -> diagram IR -> DOT -> SVG, offline and deterministic.

The pipeline, one module per stage:

* ``agentnb.render.model`` — the IR (``Diagram``, ``Node``, ``Edge``, ``Overlay``);
* ``agentnb.render.extract`` — StateGraph/Workflow/run -> IR, events -> overlay;
* ``agentnb.render.dot`` — IR -> DOT text (one visual grammar, stable SVG ids/classes);
* ``agentnb.render.svg`` — DOT -> SVG with the ``dot`` program, bounded and checked;
* ``agentnb.render.text`` — IR -> text, when there is no Graphviz;
* ``agentnb.render.display`` — notebook ``_repr_mimebundle_``;
* ``agentnb.render.export`` — ``draw(obj, "x.svg")`` and ``agentnb draw``;
* ``agentnb.render.assets`` — Graphviz compiled to WebAssembly, for the live widget.

Only the standard library is needed; the ``dot`` program only for SVG/PNG/PDF.
"""

from __future__ import annotations

from agentnb.render.assets import VIZ_JS_VERSION, viz_js_path
from agentnb.render.display import mimebundle
from agentnb.render.dot import to_dot
from agentnb.render.export import cli_draw, draw
from agentnb.render.extract import (
    diagram_for,
    diagram_from_graph,
    diagram_from_instance,
    diagram_from_machine,
    diagram_from_run,
    overlay_from_events,
    overlay_from_history,
)
from agentnb.render.model import Diagram, Edge, EdgeKind, Node, NodeKind, Overlay
from agentnb.render.svg import RenderError, render_svg
from agentnb.render.text import to_text
from agentnb.render.timeline import Timeline, timeline, timeline_svg

__all__ = [
    "VIZ_JS_VERSION",
    "Diagram",
    "Edge",
    "EdgeKind",
    "Node",
    "NodeKind",
    "Overlay",
    "RenderError",
    "Timeline",
    "cli_draw",
    "diagram_for",
    "diagram_from_graph",
    "diagram_from_instance",
    "diagram_from_machine",
    "diagram_from_run",
    "draw",
    "mimebundle",
    "overlay_from_events",
    "overlay_from_history",
    "render_svg",
    "timeline",
    "timeline_svg",
    "to_dot",
    "to_text",
    "viz_js_path",
]
