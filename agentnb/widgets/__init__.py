"""Live notebook views of runs: see, step and approve a workflow run inside Jupyter.

Needs the ``notebook`` extra (``anywidget``, ``ipywidgets``)::

    from agentnb.widgets import view
    view(run)      # a RunView: drawing, event log, state, Step/Run/Stop, Approve/Reject
"""

from __future__ import annotations

try:
    import anywidget  # noqa: F401  # checked here so the error names the extra to install
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from agentnb.errors import MissingDependency

    raise MissingDependency("anywidget", "notebook", "showing live views of runs") from exc

from agentnb.widgets._view import RunView, view

__all__ = ["RunView", "view"]
