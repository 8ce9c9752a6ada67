"""Which transitions an event enables: the standard's selection and conflict resolution.

For each active atomic state in document order, the first transition (of the state, else
of its nearest ancestor) whose event descriptor matches and whose condition holds is
enabled; then conflicting ones are removed — two transitions conflict when their exit sets
intersect, and the one whose source is a descendant wins, else the earlier one. The ones
removed are recorded in the microstep trace as *preempted*.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from agentnb._aio import settle
from agentnb.errors import DefinitionError
from agentnb.fsm.entry_exit import compute_exit_set, document_order
from agentnb.fsm.expressions import ExpressionError
from agentnb.fsm.nodes import ChartTransition, Node

if TYPE_CHECKING:
    from agentnb.fsm.interpreter import Session

__all__ = ["remove_conflicting_transitions", "select_eventless_transitions", "select_transitions"]


def _select(session: Session, event: dict[str, Any] | None) -> list[ChartTransition]:
    enabled: list[ChartTransition] = []
    atomic = sorted((n for n in session.configuration if n.is_atomic), key=document_order)
    for state in atomic:
        node: Node | None = state
        while node is not None and node.kind != "scxml":
            candidates = node.eventless if event is None else node.evented
            chosen = next((t for t in candidates if _enabled(session, t, event)), None)
            if chosen is not None:
                if chosen not in enabled:
                    enabled.append(chosen)
                break
            node = node.parent
    return remove_conflicting_transitions(session, enabled)


def select_eventless_transitions(session: Session) -> list[ChartTransition]:
    """Eventless transitions enabled now, conflicts removed (``selectEventlessTransitions``)."""
    return _select(session, None)


def select_transitions(session: Session, event: dict[str, Any]) -> list[ChartTransition]:
    """Transitions ``event`` enables, innermost first, conflicts removed (``selectTransitions``)."""
    return _select(session, event)


def _enabled(session: Session, t: ChartTransition, event: dict[str, Any] | None) -> bool:
    if event is None:
        if t.events:
            return False
    elif not t.events or not t.matches(event["name"]):
        return False
    return _condition(session, t)


def _condition(session: Session, t: ChartTransition) -> bool:
    cond = t.cond
    if cond is None:
        return True
    if cond.fn is not None:
        result = settle(cond.fn(copy.deepcopy(session.data), session.payload()))
        # A guard that forgets to return gives None; reading that as False would hide the bug.
        if not isinstance(result, bool):
            raise DefinitionError(
                f"guard {cond.text!r} returned {type(result).__name__} {result!r}, not a bool",
                culprit=cond.text,
                fix="Return True or False from the guard",
            )
        return result
    try:
        return bool(session.evaluate(cond.expr))  # type: ignore[arg-type]
    except ExpressionError as exc:
        session.error(f"cond {cond.text!r}: {exc}")
        return False


def remove_conflicting_transitions(
    session: Session, enabled: list[ChartTransition]
) -> list[ChartTransition]:
    """Keep a transition unless an earlier one (in document order) exits the same states;
    a descendant's transition preempts its ancestor's (``removeConflictingTransitions``)."""
    filtered: list[ChartTransition] = []
    exits: dict[int, set[Node]] = {}
    for t1 in enabled:
        exit1 = compute_exit_set(session.configuration, [t1], session.history)
        preempted = False
        remove: list[ChartTransition] = []
        for t2 in filtered:
            if exit1 & exits[id(t2)]:
                if t1.source.is_descendant_of(t2.source):
                    remove.append(t2)
                else:
                    preempted = True
                    break
        if preempted:
            session.preempted.append(repr(t1))
            continue
        for t2 in remove:
            filtered.remove(t2)
            session.preempted.append(repr(t2))
        filtered.append(t1)
        exits[id(t1)] = exit1
    return filtered
