"""What a machine panel shows, as JSON-ready data: event buttons, history rows, reloads.

Everything here is pure apart from the guards :func:`event_buttons` asks: they get a copy of
the context (through :meth:`StateMachine.decide`), never an action or a hook runs. User data
(context, payloads, guard names, reload problems) stays data: the browser renders it with
``textContent``, never as HTML.

Example:
    >>> from agentnb.fsm import StateMachine
    >>> door = StateMachine("door", ["closed", "open"], initial="closed")
    >>> _ = door.add_transition("closed", "push", "open")
    >>> _ = door.add_transition("open", "pull", "closed")
    >>> [(b["event"], b["enabled"], b["reason"]) for b in event_buttons(door, "closed", {})]
    [('push', True, 'closed → open'), ('pull', False, 'not allowed in closed')]
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentnb._aio import run_sync
from agentnb.fsm.machine import StateMachine, Transition, callable_name
from agentnb.render.model import Overlay
from agentnb.widgets._events import short

if TYPE_CHECKING:
    from agentnb.fsm import ReloadResult, TransitionRecord

__all__ = [
    "event_buttons",
    "machine_overlay_payload",
    "parse_payload",
    "record_row",
    "reload_payload",
]


def _guard_names(transitions: tuple[Transition, ...]) -> list[str]:
    return [str(callable_name(t.guard)) for t in transitions if t.guard is not None]


def _named(names: list[str]) -> str:
    return f"guard {names[0]}" if len(names) == 1 else f"guards {', '.join(names)}"


def _decide(
    machine: StateMachine, state: str, event: str, context: Mapping[str, Any]
) -> Transition | None:
    guards = [t.guard for t in machine.transitions_for(state, event) if t.guard is not None]
    if any(inspect.iscoroutinefunction(g) for g in guards):
        return run_sync(machine.adecide(state, event, context))
    return machine.decide(state, event, context)


def _button(
    machine: StateMachine, state: str, event: str, context: Mapping[str, Any]
) -> dict[str, Any]:
    if event not in machine.allowed_events(state):
        final = " (a final state)" if state in machine.final else ""
        return {"event": event, "enabled": False, "reason": f"not allowed in {state}{final}"}
    guards = _guard_names(machine.transitions_for(state, event))
    try:
        chosen = _decide(machine, state, event, context)
    except Exception as exc:  # a guard's own error: the payload may be what it needs
        reason = (
            f"{_named(guards)} could not decide without a payload "
            f"({type(exc).__name__}: {exc}); sending decides"
        )
        return {"event": event, "enabled": True, "reason": reason}
    if chosen is None:
        verb = "refuses" if len(guards) == 1 else "refuse"
        return {"event": event, "enabled": False, "reason": f"{_named(guards)} {verb} this context"}
    passed = f" (guard {callable_name(chosen.guard)} passes)" if chosen.guard else ""
    reason = f"{state} → {chosen.target}{passed}"
    return {"event": event, "enabled": True, "reason": reason, "target": chosen.target}


def event_buttons(
    machine: StateMachine, state: str, context: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """One button per event of ``machine``: enabled when the event would move ``state`` now.

    Guards are asked with ``context`` and no payload; a payload typed in the panel is
    checked when the event is sent. A guard that cannot decide without a payload (it
    raises) leaves its button enabled, and the send decides.

    Returns:
        ``{"event", "enabled", "reason", "target"}`` in the order events were declared;
        ``reason`` says why a button is disabled ("not allowed in RED", "guard night_mode
        refuses this context") or where an enabled one leads ("RED → GREEN"); ``target``
        is ``None`` unless the guards chose one.
    """
    return [{"target": None, **_button(machine, state, e, context)} for e in machine.events]


def record_row(record: TransitionRecord) -> dict[str, Any]:
    """The history row the browser shows for one processed event."""
    return {
        "seq": record.seq,
        "event": record.event,
        "source": record.source,
        "target": record.target,
        "ignored": record.ignored,
        "reason": record.reason or "",
        "at": record.at,
        "payload": "" if record.payload is None else short(record.payload, 120),
        "delta": short(record.delta, 120) if record.delta else "",
    }


def machine_overlay_payload(overlay: Overlay) -> dict[str, Any]:
    """An instance's overlay as the browser toggles it: keyed, so parallel edges light apart.

    ``last`` is ``[source, target, key]`` of the transition taken last (key ``""`` for the
    edge from the start marker), or ``None``.
    """
    last = [*overlay.last, overlay.last_key or ""] if overlay.last else None
    return {
        "status": overlay.status,
        "current": overlay.current,
        "visited": list(overlay.visited),
        "keyed": [[s, t, k, n] for s, t, k, n in overlay.keyed],
        "last": last,
    }


def reload_payload(result: ReloadResult) -> dict[str, Any]:
    """A reload attempt as the panel shows it: applied, or refused with every problem."""
    return {
        "status": result.status,
        "generation": result.generation,
        "path": result.path,
        "at": result.at,
        "problems": [str(problem) for problem in result.problems],
    }


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_payload(text: str) -> Any:
    """The payload typed in the panel: JSON text, or ``None`` when the field is empty.

    Raises:
        ValueError: the text is not JSON (the message says where and what to do).
    """
    if not text.strip():
        return None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"The payload is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). "
            'Type JSON such as {"speed": 30} or "text" in quotes, or leave it empty.'
        ) from None
    except ValueError as exc:
        raise ValueError(f"The payload is not JSON: {exc}. Use null or a number.") from None
