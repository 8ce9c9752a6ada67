"""Notebook display: ``_repr_mimebundle_`` for workflows, runs and state machines, offline.

With Graphviz installed the bundle holds the SVG drawing and a text listing; without it,
the listing and a hint to install Graphviz — a notebook never breaks for want of ``dot``.

StateGraph, Workflow and Run call :func:`mimebundle` from their ``_repr_mimebundle_``,
importing this module only when a notebook asks to display them; a StateMachine or a
machine instance passed to :func:`mimebundle` draws its transition table (and, for an
instance, where it is and how it got there).
"""

from __future__ import annotations

from collections.abc import Container

from agentnb.errors import MissingDependency
from agentnb.render.extract import diagram_for
from agentnb.render.model import Direction
from agentnb.render.svg import RenderError, render_svg
from agentnb.render.text import to_text

__all__ = ["INSTALL_HINT", "SVG_MIME", "mimebundle"]

SVG_MIME = "image/svg+xml"
INSTALL_HINT = (
    "(Install Graphviz to see this drawn: apt-get install graphviz, brew install graphviz "
    "or conda install graphviz.)"
)


def mimebundle(
    obj: object,
    include: Container[str] | None = None,
    exclude: Container[str] | None = None,
    *,
    direction: Direction = "LR",
) -> dict[str, str]:
    """The display bundle of a StateGraph, Workflow, run, StateMachine or machine instance:
    SVG plus a text listing.

    Never raises for a missing or failing Graphviz: the text stands in for the drawing.

    Args:
        obj: what to show.
        include: MIME types the front end wants (``None``: all).
        exclude: MIME types it does not want.
        direction: ``"LR"`` or ``"TB"``.

    Returns:
        ``{"text/plain": ..., "image/svg+xml": ...}``; without Graphviz only ``text/plain``,
        ending with ``INSTALL_HINT``.

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
        >>> from agentnb.render import mimebundle
        >>> bundle = mimebundle(graph)  # what Jupyter shows for a graph, a run or a machine
        >>> sorted(bundle)
        ['image/svg+xml', 'text/plain']
        >>> mimebundle(graph, include={"text/plain"})["text/plain"].splitlines()[0]
        'refund: 2 nodes, 3 edges'
    """
    diagram = diagram_for(obj, direction=direction)
    text = to_text(diagram)
    wanted = (include is None or SVG_MIME in include) and not (exclude and SVG_MIME in exclude)
    if not wanted:
        return {"text/plain": text}
    try:
        svg = render_svg(diagram)
    except MissingDependency:
        return {"text/plain": f"{text}\n{INSTALL_HINT}"}
    except RenderError as exc:
        return {"text/plain": f"{text}\n(The diagram could not be drawn: {exc})"}
    return {"text/plain": text, SVG_MIME: svg}
