"""State machines and their instances as diagrams: the transition table and a replay.

:func:`diagram_from_machine` draws a :class:`~agentnb.fsm.StateMachine`'s transition
table — each state once, one edge per declared transition, guards on the edges — and
:func:`overlay_from_history` replays an instance's history into an overlay, the way
:func:`~agentnb.render.extract.overlay_from_events` replays a run. ``agentnb.fsm`` is
imported for type checking only: drawing sits above the state machines, not beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

from agentnb.render.model import (
    START_ID,
    Diagram,
    Direction,
    Edge,
    EdgeKind,
    Node,
    NodeKind,
    Overlay,
)

if TYPE_CHECKING:
    from agentnb.fsm import MachineInstance, StateMachine, TransitionRecord

__all__ = ["diagram_from_instance", "diagram_from_machine", "overlay_from_history"]


def _marker_id(states: Sequence[str]) -> str:
    """Id of a machine's start marker: ``START``, unless a state took that name."""
    # "(START)" is not a valid state name, so it can never collide in turn.
    return START_ID if START_ID not in states else f"({START_ID})"


def _fn_name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", None) or repr(fn))


def _hooks(machine: StateMachine, state: str) -> str | None:
    parts = [
        f"{when} {', '.join(_fn_name(h) for h in hooks)}"
        for when, hooks in (
            ("on enter:", machine.enter_hooks(state)),
            ("on exit:", machine.exit_hooks(state)),
        )
        if hooks
    ]
    return "; ".join(parts) or None


def _transition_keys(machine: StateMachine) -> dict[int, str]:
    """Transition index -> its edge key: the event (``event#2`` ... for repeats)."""
    keys: dict[int, str] = {}
    taken: set[tuple[str, str, str]] = set()
    for t in machine.transitions:
        key, n = t.event, 1
        while (t.source, t.target, key) in taken:
            n += 1
            key = f"{t.event}#{n}"
        taken.add((t.source, t.target, key))
        keys[t.index] = key
    return keys


def _transition_edges(machine: StateMachine) -> list[Edge]:
    """One edge per declared transition, keyed by event (``event#2`` ... for repeats)."""
    edges: list[Edge] = []
    keys = _transition_keys(machine)
    for t in machine.transitions:
        key = keys[t.index]
        guarded = t.guard is not None
        edges.append(
            Edge(
                t.source,
                t.target,
                EdgeKind.CONDITIONAL if guarded else EdgeKind.PLAIN,
                label=t.event if not t.label else f"{t.event}: {t.label}",
                guard=_fn_name(t.guard) if t.guard is not None else None,
                key=key,
            )
        )
    return edges


def diagram_from_machine(
    machine: StateMachine,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
    overlay: Overlay | None = None,
) -> Diagram:
    """The diagram of a state machine: exactly its transition table.

    Each state is one node (final states drawn as ``final``, on-enter/on-exit hooks in its
    description); the ``START`` marker points at the initial state; each transition is an
    edge labelled with its event (and its ``label``, if any), guarded ones dashed with
    ``[guard]``. Transitions joining the same two states stay apart by ``Edge.key``: the
    event name, ``event#2``... when one event has several (guarded) transitions there.

    Args:
        machine: the definition; it need not be valid or frozen.
        direction: ``"LR"`` or ``"TB"``.
        title: drawn above; the machine's name when omitted.
        legend: draw a legend; by default only with guards or an overlay.
        overlay: what an instance did (see :func:`overlay_from_history`).

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed")
        >>> _ = door.add_transition("closed", "push", "open")
        >>> _ = door.add_transition("open", "pull", "closed")
        >>> [e.text for e in diagram_from_machine(door).edges]
        [None, 'push', 'pull']
    """
    start = _marker_id(machine.states)
    final = set(machine.final)
    nodes = [Node(start, "", NodeKind.START)]
    nodes += [
        Node(
            state,
            state,
            NodeKind.FINAL if state in final else NodeKind.NORMAL,
            entry=state == machine.initial,
            description=_hooks(machine, state),
        )
        for state in machine.states
    ]
    edges = [Edge(start, machine.initial), *_transition_edges(machine)]
    if legend is None:
        legend = overlay is not None or any(e.kind is EdgeKind.CONDITIONAL for e in edges)
    return Diagram(
        nodes=tuple(nodes),
        edges=tuple(edges),
        title=machine.name if title is None else title,
        direction=direction,
        legend=legend,
        overlay=overlay,
        machine=True,
    )


def _state_name(value: object) -> str:
    return value.name if isinstance(value, Enum) else str(value)


def overlay_from_history(
    history: Iterable[TransitionRecord],
    machine: StateMachine,
    *,
    current: str | None = None,
) -> Overlay:
    """Replay an instance's history into an overlay; pure, like :func:`overlay_from_events`.

    The instance starts in the first record's source (the initial state when there is no
    record yet); ignored events change nothing; records naming states the machine does not
    have (an older definition) are skipped. The status is ``completed`` once the current
    state is final, ``running`` before.

    Args:
        history: the instance's records in ``seq`` order.
        machine: the definition the instance follows now.
        current: the current state's name; the last replayed state when omitted.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> from agentnb.render import overlay_from_history
        >>> front = door.start("front")
        >>> _ = front.send("push")
        >>> overlay = overlay_from_history(front.history, door)
        >>> overlay.current, overlay.visited
        ('open', ('closed', 'open'))
    """
    records = [r for r in history if not r.ignored]
    known = set(machine.states)
    keys = _transition_keys(machine)
    by_event = {(t.source, t.event, t.target): keys[t.index] for t in reversed(machine.transitions)}
    first = records[0].source if records else current or machine.initial
    visited: dict[str, None] = {}
    counts: dict[tuple[str, str, str], int] = {}
    last: tuple[str, str, str] | None = None
    if first in known:
        visited[first] = None
        if first == machine.initial:
            last = (_marker_id(machine.states), first, "")
            counts[last] = 1
    state = first
    for record in records:
        if record.source not in known or record.target not in known:
            continue
        key = keys.get(record.transition) if record.transition is not None else None
        if key is None:  # recorded before transitions were numbered, or by another definition
            key = by_event.get((record.source, record.event, record.target), record.event)
        last = (record.source, record.target, key)
        counts[last] = counts.get(last, 0) + 1
        visited[record.target] = None
        state = record.target
    if current is None:
        current = state
    pairs: dict[tuple[str, str], int] = {}
    for (s, t, _), n in counts.items():
        pairs[(s, t)] = pairs.get((s, t), 0) + n
    return Overlay(
        status="completed" if current in machine.final else "running",
        current=current if current in known else None,
        visited=tuple(visited),
        traversed=tuple((s, t, n) for (s, t), n in pairs.items()),
        last=last[:2] if last else None,
        keyed=tuple((s, t, k, n) for (s, t, k), n in counts.items()),
        last_key=last[2] if last and last[2] else None,
    )


def diagram_from_instance(
    instance: MachineInstance,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
) -> Diagram:
    """The instance's machine with its overlay: current state lit, path taken, last step.

    The title names the machine, the instance and its status.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> from agentnb.render import diagram_from_instance, to_text
        >>> front = door.start("front")
        >>> _ = front.send("push")
        >>> print(to_text(diagram_from_instance(front)))
        door · instance front · completed: 2 states, 1 transition
        ...
        instance: completed — in open
          visited: closed, open
          taken: START -> closed ×1, closed -> open ×1
    """
    from agentnb.fsm import StateMachine

    machine = instance.machine
    assert isinstance(machine, StateMachine)  # a statechart's is drawn by extract_chart
    overlay = overlay_from_history(instance.history, machine, current=_state_name(instance.current))
    if title is None:
        title = f"{machine.name} · instance {instance.id} · {overlay.status}"
    return diagram_from_machine(
        machine, direction=direction, title=title, legend=legend, overlay=overlay
    )
