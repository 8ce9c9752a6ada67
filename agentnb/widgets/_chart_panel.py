"""What a MachineView shows for a statechart instance, as JSON-ready data.

Buttons: one per event the chart names (not the generated ``after.*`` ones), enabled when
the event would enable a transition now — asked of a throwaway copy of the session, so no
action runs to find out. The overlay lights the whole active configuration. Microsteps:
what the algorithm did for the last event sent from this panel (or code in this process),
each with the configuration after it and the edges it took, for the microstep mode.
Timers: the pending delayed events with their fire time and the instance clock's "now".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentnb.fsm.interpreter import Session, new_event
from agentnb.fsm.selection import select_transitions
from agentnb.render.extract_chart import microstep_diagrams

if TYPE_CHECKING:
    from agentnb.fsm import MachineInstance, Microstep, Statechart

__all__ = ["chart_buttons", "chart_overlay_payload", "microstep_payloads", "timer_rows"]


def _events(chart: Statechart) -> list[str]:
    return [e for e in chart.events if e not in chart.delays and "*" not in e]


def chart_buttons(instance: MachineInstance) -> list[dict[str, Any]]:
    """``{"event", "enabled", "reason", "target"}`` for every event the chart names."""
    snap = instance.store.load(instance.id)
    assert snap is not None
    buttons = []
    for event in _events(instance.chart):
        session = Session.restore(instance.chart, snap.chart, snap.context)
        if not session.running:
            buttons.append(
                {"event": event, "enabled": False, "reason": "the chart has ended", "target": None}
            )
            continue
        enabled = select_transitions(session, new_event(event))
        if enabled:
            moves = ", ".join(repr(t).strip("<>") for t in enabled)
            buttons.append({"event": event, "enabled": True, "reason": moves, "target": None})
        else:
            reason = "no transition enabled in " + (snap.state or "this configuration")
            buttons.append({"event": event, "enabled": False, "reason": reason, "target": None})
    return buttons


def chart_overlay_payload(instance: MachineInstance) -> dict[str, Any]:
    """The overlay the browser toggles: every active state (boxes too) lit."""
    chart = instance.chart
    configuration = instance.configuration
    return {
        "status": "completed" if instance.is_final else "running",
        "current": None,
        "active": [i for i in chart.nodes if i in configuration],
        "visited": [],
        "keyed": [],
        "last": None,
    }


def microstep_payloads(chart: Statechart, steps: list[Microstep]) -> list[dict[str, Any]]:
    """One entry per microstep: its lists, the configuration after it, the edges it took."""
    found = []
    for step, diagram in zip(steps, microstep_diagrams(chart, steps), strict=True):
        overlay = diagram.overlay
        assert overlay is not None
        found.append(
            {
                "title": diagram.title,
                "event": step.event,
                "taken": step.taken,
                "preempted": step.preempted,
                "exited": step.exited,
                "entered": step.entered,
                "actions": step.actions,
                "queued": step.queued,
                "active": list(overlay.active),
                "edges": [[s, t, k] for s, t, k, _ in overlay.keyed],
            }
        )
    return found


def timer_rows(instance: MachineInstance) -> list[dict[str, Any]]:
    """The pending timers: event, cancellation id, fire time, and seconds left now."""
    now = instance.clock()
    return [
        {"event": t.event, "sendid": t.sendid or "", "fire_at": t.fire_at, "in": t.fire_at - now}
        for t in instance.timers()
    ]
