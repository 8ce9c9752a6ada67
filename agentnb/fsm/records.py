"""What a state-machine store keeps: frozen records with JSON payloads.

Times are seconds since the epoch (UTC) as floats, like the workflow records.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from agentnb._json import loads

__all__ = ["InstanceSnapshot", "TimerChange", "TimerRecord", "TransitionRecord"]


@dataclass(frozen=True, slots=True)
class TransitionRecord:
    """One processed event of an instance, in order (``seq`` counts from 1 per instance).

    An event that was not allowed and ``strict=False`` is recorded with ``ignored=True``,
    ``source == target``, and ``reason`` saying why.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> record = door.start("front").send("push", payload={"by": "ada"})
        >>> record.seq, record.event, record.source, record.target, record.payload
        (1, 'push', 'closed', 'open', {'by': 'ada'})
    """

    instance_id: str
    seq: int
    event: str
    event_id: str
    source: str
    target: str
    payload: Any
    delta: dict[str, Any]
    """The context keys the transition set (exit hooks, action, enter hooks merged)."""
    at: float = field(compare=False)
    ignored: bool = False
    reason: str | None = None
    transition: int | None = None
    """Which declared transition fired (its ``index``); ``None`` for an ignored event."""

    @property
    def at_iso(self) -> str:
        """``at`` as an ISO 8601 UTC timestamp."""
        return _dt.datetime.fromtimestamp(self.at, _dt.UTC).isoformat(timespec="milliseconds")

    def __str__(self) -> str:
        if self.ignored:
            return f"#{self.seq} {self.event} ignored in {self.source} ({self.reason})"
        return f"#{self.seq} {self.source} --{self.event}--> {self.target}"


@dataclass(frozen=True, slots=True)
class InstanceSnapshot:
    """Where an instance stands after ``seq`` records: its active states' names, its
    context and its session.

    Example:
        >>> from agentnb.fsm import MemoryMachineStore, StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> store = MemoryMachineStore()
        >>> _ = door.start("front", store=store).send("push")
        >>> snapshot = store.load("front")
        >>> snapshot.state, snapshot.seq, snapshot.machine
        ('open', 1, 'door')
    """

    instance_id: str
    machine: str
    state: str
    context: dict[str, Any]
    seq: int
    chart: dict[str, Any]
    """The interpreter's session besides the context (JSON: the configuration, history
    values ...; ``agentnb.fsm.session_state``), for a flat machine's instance too."""

    @classmethod
    def from_row(cls, instance_id: str, row: tuple[str, str, str, int, str]) -> InstanceSnapshot:
        """From a stored row ``(machine, state, context_json, seq, chart_json)``."""
        machine, state, context, seq, chart = row
        return cls(instance_id, machine, state, loads(context), seq, loads(chart))


@dataclass(frozen=True, slots=True)
class TimerRecord:
    """A delayed event waiting in the store: it fires once, at ``fire_at`` or later.

    ``key`` orders timers with the same ``fire_at`` (scheduling order) and names the timer's
    firing: its event record has ``event_id == "timer:" + key``, so a timer can never be
    processed twice, whichever process drives the instance. ``sendid`` is the cancellation
    id (``<send id>``/``<cancel sendid>``), ``None`` when the send had none.

    Example:
        >>> from agentnb import ManualClock, State, Statechart
        >>> kettle = Statechart("kettle", [State("heating", after={5: "boiled"}), State("boiled")])
        >>> instance = kettle.start("k1", clock=ManualClock(100.0))
        >>> [(timer.instance_id, timer.fire_at) for timer in instance.timers()]
        [('k1', 105.0)]
    """

    instance_id: str
    key: str
    event: str
    data: Any
    fire_at: float
    sendid: str | None = None

    @property
    def event_id(self) -> str:
        return f"timer:{self.key}"


@dataclass(frozen=True, slots=True)
class TimerChange:
    """The timers one commit adds and cancels (by ``sendid``), in the same transaction."""

    add: tuple[TimerRecord, ...] = ()
    cancel: tuple[str, ...] = ()
    fired: str | None = None
    """The key of the timer this commit processes; it is removed with the commit."""
