"""How runtime objects show themselves, without the runtime importing what draws them.

StateGraph, Workflow, Run, StateMachine and machine instances inherit these mixins. The
diagram pipeline (:mod:`agentnb.render`) and the widgets (:mod:`agentnb.widgets`) sit above
them, so they are imported only when a notebook displays one of them, or ``draw``,
``timeline`` or ``view`` is called — the one place imports point up, lazily.
"""

from __future__ import annotations

import os
from collections.abc import Container
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from agentnb.render.timeline import Timeline

__all__ = ["Drawable", "HasTimeline", "MachineViewable", "Viewable"]


class Drawable:
    """Notebook display (SVG diagram + text) and ``draw(path)`` export."""

    __slots__ = ()

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> dict[str, str]:
        from agentnb.render.display import mimebundle

        return mimebundle(self, include, exclude)

    def draw(self, path: str | os.PathLike[str], **options: Any) -> Path:
        """Write the diagram to ``path``: ``.svg``, ``.png``, ``.pdf`` or ``.dot``.

        Options are those of :func:`agentnb.render.export.draw`: ``direction="TB"``,
        ``title=...``, ``legend=True``.
        """
        from agentnb.render.export import draw

        return draw(self, path, **options)

    def to_mermaid(self, **options: Any) -> str:
        """The diagram as Mermaid flowchart text, for a Markdown cell or a README.

        Wrap it in a fenced ``mermaid`` block; JupyterLab 4.1+ and GitHub render it.
        Options: ``direction="TB"``, ``title=...``.
        """
        from agentnb.render.extract import diagram_for
        from agentnb.render.mermaid import to_mermaid

        return to_mermaid(diagram_for(self, **options))


class HasTimeline:
    """``timeline()``: a run's node executions over time, as a Gantt-style SVG."""

    __slots__ = ()

    def timeline(self, *, width: int = 720) -> Timeline:
        """Node executions over time: one bar per execution, retries, timeouts and the
        wait for approval visible. Displays itself in a notebook; ``.svg()`` gives the text.
        """
        from agentnb.render.timeline import timeline

        return timeline(self, width=width)  # type: ignore[arg-type]  # a Run has .events


class Viewable:
    """``view()``: a live panel of a run in Jupyter."""

    __slots__ = ()

    def view(self, **options: Any) -> Any:
        """A live panel of this run in Jupyter (an ``agentnb.widgets.RunView``): the
        diagram, the event log, the state, Step/Run/Stop and Approve/Reject.

        Options are those of ``RunView``. Needs the ``notebook`` extra.
        """
        from agentnb.widgets import view

        return view(self, **options)  # type: ignore[arg-type]  # only Run mixes this in


class MachineViewable:
    """``view()``: a live panel of a state-machine instance in Jupyter."""

    __slots__ = ()

    def view(self, **options: Any) -> Any:
        """A live panel of this instance in Jupyter (an ``agentnb.widgets.MachineView``):
        the diagram with the current state lit, a button per event (disabled ones say
        why), the history and the context.

        Options are those of ``MachineView``, e.g. ``reloader=`` to follow a definition
        file. Needs the ``notebook`` extra.
        """
        from agentnb.widgets import view_machine

        # Only MachineInstance and ChartInstance mix this in.
        return view_machine(self, **options)  # type: ignore[arg-type]
