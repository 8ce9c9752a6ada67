"""Live notebook views: see, step and approve a workflow run, or drive a state machine.

Needs the ``notebook`` extra (``anywidget``, ``ipywidgets``)::

    from agentnb.widgets import view, view_machine
    view(run)              # a RunView: drawing, event log, state, Step/Run/Stop, Approve/Reject
    view_machine(light)    # a MachineView: drawing, a button per event, history, context
"""

from __future__ import annotations

try:
    import anywidget  # noqa: F401  # checked here so the error names the extra to install
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from agentnb.errors import MissingDependency

    raise MissingDependency("anywidget", "notebook", "showing live views of runs") from exc

from agentnb.widgets._machine_view import MachineView, view_machine
from agentnb.widgets._view import RunView, view

__all__ = ["MachineView", "RunView", "view", "view_machine"]
