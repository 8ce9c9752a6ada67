"""Notebook display: ``_repr_mimebundle_`` for StateGraph, Workflow and Run, offline.

With Graphviz installed the bundle holds the SVG drawing and a text listing; without it,
the listing and a hint to install Graphviz — a notebook never breaks for want of ``dot``.

Two ways to wire it (see the package docstring of :mod:`agentnb.render`):

* a method on each class: ``def _repr_mimebundle_(self, include=None, exclude=None):
  return mimebundle(self, include, exclude)``;
* or, keeping ``graph`` free of imports from ``render``, :func:`register_ipython_display`
  called once from ``agentnb/__init__.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Container
from typing import Any

from agentnb.errors import MissingDependency
from agentnb.render.extract import diagram_for
from agentnb.render.model import Direction
from agentnb.render.svg import RenderError, render_svg
from agentnb.render.text import to_text

__all__ = ["INSTALL_HINT", "SVG_MIME", "mimebundle", "register_ipython_display"]

SVG_MIME = "image/svg+xml"
INSTALL_HINT = (
    "(Install Graphviz to see this drawn: apt-get install graphviz, brew install graphviz "
    "or conda install graphviz.)"
)

_DRAWABLE = (
    ("agentnb.graph.builder", "StateGraph"),
    ("agentnb.graph.workflow", "Workflow"),
    ("agentnb.graph.run", "Run"),
)


def mimebundle(
    obj: object,
    include: Container[str] | None = None,
    exclude: Container[str] | None = None,
    *,
    direction: Direction = "LR",
) -> dict[str, str]:
    """The display bundle of a StateGraph, Workflow or run: SVG plus a text listing.

    Never raises for a missing or failing Graphviz: the text stands in for the drawing.

    Args:
        obj: what to show.
        include: MIME types the front end wants (``None``: all).
        exclude: MIME types it does not want.
        direction: ``"LR"`` or ``"TB"``.

    Returns:
        ``{"text/plain": ..., "image/svg+xml": ...}``; without Graphviz only ``text/plain``,
        ending with :data:`INSTALL_HINT`.
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


def _printer(obj: object) -> dict[str, str]:
    return mimebundle(obj)


def register_ipython_display(shell: Any = None) -> bool:
    """Teach the running IPython to display StateGraph, Workflow and Run objects.

    Registration is by module and class name, so nothing from ``agentnb.graph`` is imported
    here and ``graph`` needs no import from ``render``.

    Args:
        shell: the IPython shell; the running one when omitted.

    Returns:
        True when registered, False outside IPython.
    """
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    formatter = shell.display_formatter.mimebundle_formatter
    for module, name in _DRAWABLE:
        formatter.for_type_by_name(module, name, _printer)
    return True
