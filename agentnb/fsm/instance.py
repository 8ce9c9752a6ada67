"""Running machines: one instance class for flat machines and statecharts alike.

A :class:`~agentnb.fsm.machine.StateMachine` runs as the statechart it compiles to
(``agentnb.fsm.flat``), so every instance is a :class:`MachineInstance` driven by the
W3C SCXML interpreter (:mod:`agentnb.fsm.interpreter`), and every store keeps one format:
the snapshot (state, context, and the session as JSON: configuration, history values ...),
one record per processed event, and the durable timers.

Processing an event is all-or-nothing: the interpreter runs one macrostep on a copy of the
context (for a flat machine: the guards decide, then the source's on-exit hooks, the
transition's action and the target's on-enter hooks), and only then is the new snapshot
saved *together with* the event's record and the timer changes. If anything raises,
nothing is saved. An event id that was already processed returns its recorded result and
runs nothing again. A delayed event is a row in the store, not a sleeping task:
:meth:`MachineInstance.run_due` fires what is due, under the event id ``timer:<key>``, so two
processes driving one instance fire it once.

Example:
    >>> from agentnb.fsm import StateMachine
    >>> door = StateMachine("door", ["closed", "open"], initial="closed")
    >>> _ = door.add_transition("closed", "push", "open")
    >>> _ = door.add_transition("open", "pull", "closed")
    >>> d = door.start("front", context={"opened": 0})
    >>> str(d.send("push", event_id="evt-1"))
    '#1 closed --push--> open'
    >>> d.send("push", event_id="evt-1").seq  # same id: the recorded result, nothing re-run
    1
    >>> d.current
    'open'

    A statechart's instance is the same class, with timers:

    >>> from agentnb.fsm.chart import State, Statechart
    >>> from agentnb.fsm.timers import ManualClock
    >>> clock = ManualClock()
    >>> light = Statechart("light", [
    ...     State("on", after={5: "off"}, on={"toggle": "off"}),
    ...     State("off", on={"toggle": "on"}),
    ... ])
    >>> lamp = light.start("lamp", clock=clock)
    >>> [t.event for t in lamp.timers()]
    ['after.on.0']
    >>> clock.advance(5)
    5.0
    >>> [str(r) for r in lamp.run_due()]
    ['#1 on --after.on.0--> off']
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeAlias

from agentnb._aio import run_sync, run_threaded
from agentnb._display import Drawable, MachineViewable
from agentnb._json import check, dumps, loads
from agentnb._listeners import Listeners
from agentnb.errors import (
    IncompatibleMachine,
    InstanceConflict,
    InstanceNotFound,
    InvalidState,
    TransitionNotAllowed,
)
from agentnb.fsm.chart import Statechart
from agentnb.fsm.interpreter import Session, TimerRequest, new_event
from agentnb.fsm.machine import StateLike, StateMachine
from agentnb.fsm.memory import MemoryMachineStore
from agentnb.fsm.records import InstanceSnapshot, TimerChange, TimerRecord, TransitionRecord
from agentnb.fsm.session_state import running
from agentnb.fsm.storage import MachineStore, incoming
from agentnb.fsm.timers import Clock, wall_clock

if TYPE_CHECKING:
    from agentnb.fsm.interpreter import Microstep
    from agentnb.store.base import Checkpointer

__all__ = [
    "ChartInstance",
    "Definition",
    "MachineInstance",
    "MachineStore",
    "rebind_all",
    "resume_instance",
    "start_instance",
]

Definition: TypeAlias = StateMachine | Statechart
"""What an instance follows: a flat machine or a statechart."""

MAX_DUE = 10_000  # timers one run_due() call may fire (a timer loop must not spin forever)

ROUTE = "__route__"
"""Key of a stored timer's event that names the invoked session it is for (removed on firing)."""


class MachineInstance(Drawable, MachineViewable):
    """One running instance of a :class:`~agentnb.fsm.machine.StateMachine` or a
    :class:`~agentnb.fsm.chart.Statechart` (``machine.start()``, ``chart.start()``).

    Attributes:
        id: the instance id (also the SCXML ``_sessionid``).
        strict: raise :class:`~agentnb.errors.TransitionNotAllowed` for an event that
            enables nothing (a flat machine's default); otherwise it is recorded as ignored.
        store: where the snapshot, the event records and the timers live.
        clock: ``clock() -> seconds`` used for delayed events.
        microsteps: what the interpreter did for the last event (transitions taken and
            preempted, exit and entry sets, actions, events queued), for teaching views.
        logs: what ``<log>`` content wrote during the last event.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed")
        >>> _ = door.add_transition("closed", "push", "open")
        >>> _ = door.add_transition("open", "pull", "closed")
        >>> front = door.start("front", context={"pushes": 0})
        >>> front.state, front.send("push").target, front.state
        ('closed', 'open', 'open')
        >>> [(record.seq, record.source, record.target) for record in front.history]
        [(1, 'closed', 'open')]
    """

    def __init__(
        self,
        definition: Definition,
        instance_id: str,
        *,
        store: MachineStore,
        strict: bool,
        clock: Clock = wall_clock,
    ) -> None:
        self.id = instance_id
        self.strict = strict
        self.store = store
        self.clock = clock
        self.microsteps: list[Microstep] = []
        self.logs: list[tuple[str, Any]] = []
        self._definition = definition
        self._chart = _chart_of(definition)
        # Held only for the short commit and rebind sections, never across an await.
        self._lock = threading.Lock()
        self._refusal_listeners: Listeners[[TransitionNotAllowed]] = Listeners("refusal")

    def __repr__(self) -> str:
        snap = self._snapshot()
        return (
            f"<MachineInstance {self.id!r} of {self._definition.name!r}: "
            f"state {snap.state!r}, {snap.seq} events>"
        )

    # -- reading ------------------------------------------------------------------------

    @property
    def machine(self) -> Definition:
        """The definition this instance follows (it changes on :meth:`rebind`)."""
        return self._definition

    @property
    def chart(self) -> Statechart:
        """The statechart this instance runs: the definition itself, or the one a flat
        machine compiles to (``agentnb.fsm.flat``)."""
        return self._chart

    @property
    def state(self) -> str:
        """The names of the active atomic states, space-separated, in document order: for a
        flat machine, its one state's name."""
        return self._snapshot().state

    @property
    def current(self) -> StateLike:
        """:attr:`state` as the definition names it: a flat machine's one active state (its
        ``Enum`` member when the machine was built from an ``Enum``, else its name); for a
        statechart, the ids of the active atomic states, space-separated, like
        :attr:`state` (use :attr:`configuration` for every active state)."""
        return self._definition.state_value(self._snapshot().state)

    @property
    def context(self) -> dict[str, Any]:
        """A copy of the instance's data (a statechart's datamodel); change it through
        actions and hooks."""
        return self._snapshot().context

    @property
    def history(self) -> list[TransitionRecord]:
        """Every processed external event, in order."""
        return self.store.history(self.id)

    @property
    def is_final(self) -> bool:
        """True once a top-level final state was reached (the instance has ended)."""
        return not running(self._chart, self._session_state())

    @property
    def configuration(self) -> frozenset[str]:
        """The ids of every active state, atomic and compound (a flat machine: its one)."""
        return frozenset(self._session_state()["configuration"])

    def in_state(self, state: StateLike) -> bool:
        """Whether ``state`` (an id, or a flat machine's ``Enum`` member) is active
        (``In('id')`` in an expression)."""
        name = state.name if isinstance(state, Enum) else state
        return name in self._session_state()["configuration"]

    def allowed_events(self) -> list[str]:
        """Events (descriptors) of transitions out of the active states, guards not
        evaluated; none once the instance has ended."""
        found: dict[str, None] = {}
        for node in self._active():
            for t in node.transitions:
                found.update(dict.fromkeys(t.events))
        return list(found)

    def timers(self) -> list[TimerRecord]:
        """Pending delayed events, by fire time (a flat machine schedules none)."""
        return self.store.timers(self.id)

    # -- driving ------------------------------------------------------------------------

    def send(
        self, event: str, payload: Any = None, event_id: str | None = None
    ) -> TransitionRecord:
        """Process ``event`` and return its record. The sync twin of :meth:`asend`."""
        if self._chart.awaits:
            return run_sync(self.asend(event, payload, event_id))
        # Nothing to await: the interpreter and the store are synchronous, so the step
        # runs here rather than through an event loop.
        payload, done = incoming(self.store, self.id, payload, event_id)
        if done is not None:
            return done
        snap = self._snapshot()
        return self._commit(self._advance(snap, _external(event, payload), event_id, None))[0]

    async def asend(
        self, event: str, payload: Any = None, event_id: str | None = None
    ) -> TransitionRecord:
        """Process an external event: one macrostep to a stable configuration, then commit.

        Events the chart sends itself without a delay are processed in the same call;
        delayed ones become timers. Async guards, actions and hooks are awaited on this
        call's loop (the interpreter runs in a worker thread meanwhile).

        Args:
            event: the event name.
            payload: JSON data for guards, actions and hooks; kept in the record.
            event_id: a unique id for this event; sending an id again returns the first
                result and does nothing (a random id is used when omitted).

        Raises:
            TransitionNotAllowed: ``strict`` and the event enabled no transition; nothing
                changes.
            InvalidState: the payload or the resulting context is not JSON.
            InstanceConflict: another send on this instance committed first; nothing saved.
        """
        payload, done = incoming(self.store, self.id, payload, event_id)
        if done is not None:
            return done
        snap = self._snapshot()
        event_data = _external(event, payload)
        if self._chart.awaits:
            step = await run_threaded(self._advance, snap, event_data, event_id, None)
        else:
            step = self._advance(snap, event_data, event_id, None)
        return self._commit(step)[0]

    def run_due(self, now: float | None = None) -> list[TransitionRecord]:
        """Fire every timer due at ``now`` (the clock's time by default), oldest first.

        Each firing is one committed step. A timer another process fired first is skipped,
        so running this from several processes fires each timer exactly once.
        """
        moment = self.clock() if now is None else now
        fired: list[TransitionRecord] = []
        for _ in range(MAX_DUE):
            due = [t for t in self.store.timers(self.id) if t.fire_at <= moment]
            if not due:
                break
            timer = due[0]
            try:
                snap = self._snapshot()
                step = self._advance(snap, dict(timer.data), timer.event_id, timer, strict=False)
                record, fresh = self._commit(step)
            except InstanceConflict:
                continue  # another process stepped the instance: look again
            if fresh:  # not a timer another process fired first
                fired.append(record)
        return fired

    async def arun_due(self, now: float | None = None) -> list[TransitionRecord]:
        """The async twin of :meth:`run_due`."""
        return self.run_due(now)

    def on_refused(self, listener: Callable[[TransitionNotAllowed], object]) -> Callable[[], None]:
        """Call ``listener(error)`` whenever this instance refuses an event.

        A strict instance raises :class:`~agentnb.errors.TransitionNotAllowed` and records
        nothing, so this is how a panel showing the instance hears of it; the caller still
        gets the error (a listener that raises is reported with a :class:`RuntimeWarning`).
        Returns a function that removes the listener (safe to call twice).
        """
        return self._refusal_listeners.add(listener)

    def rebind(self, machine: Definition) -> None:
        """Follow ``machine`` from the next event on (e.g. a reloaded definition).

        Raises:
            IncompatibleMachine: an active state of the instance is not in ``machine``, or
                ``machine`` has another name; the instance keeps its definition.
        """
        chart = _chart_of(machine)
        with self._lock:
            reason = _incompatibility(self._snapshot(), machine.name, chart)
            if reason is not None:
                raise IncompatibleMachine(self.id, reason)
            self._definition, self._chart = machine, chart

    # -- internals ----------------------------------------------------------------------

    def _snapshot(self) -> InstanceSnapshot:
        snap = self.store.load(self.id)
        if snap is None:
            raise InstanceNotFound(self.id)
        return snap

    def _session_state(self) -> dict[str, Any]:
        return self._snapshot().chart

    def _active(self) -> list[Any]:
        state = self._session_state()
        if not running(self._chart, state):
            return []
        nodes = self._chart.nodes
        return sorted((nodes[i] for i in state["configuration"]), key=lambda n: n.order)

    def _advance(
        self,
        snap: InstanceSnapshot,
        event: dict[str, Any],
        event_id: str | None,
        timer: TimerRecord | None,
        *,
        strict: bool | None = None,
    ) -> _Step:
        """Run one event through the interpreter on ``snap``; saves nothing, calls no
        listener (it may run in a worker thread: see :meth:`asend`)."""
        definition, chart = self._definition, self._chart  # as they are when the step starts
        session = Session.restore(chart, snap.chart, snap.context)
        route = event.pop(ROUTE, None)
        if route:  # a timer sent by or to an invoked child session
            target = session.find(route["to"])
            sender = session.find(route["from"])
            if sender is None or not sender.running:
                target = None  # the sending session ended: its delayed sends die with it
            took = target is not None and target.running
            if target is not None:
                target.external.append(event)
        else:
            took = session.process(event)
        session.drain()
        strict = self.strict if strict is None else strict
        if not took:
            refusal = self._refusal(snap, event["name"])
            if strict:
                return _Step(definition, session, None, None, None, refusal)
        check(session.data, root="context")
        # What the step set (a flat hook returning a key's old value sets it) or changed.
        delta = {
            k: v
            for k, v in session.data.items()
            if k in session.written or snap.context.get(k, _MISSING) != v
        }
        taken = [n for step in session.trace for n in step.transitions]
        record = TransitionRecord(
            instance_id=self.id,
            seq=snap.seq + 1,
            event=event["name"],
            event_id=event_id if event_id is not None else uuid.uuid4().hex,
            source=snap.state,
            target=_summary(session) if took else snap.state,
            payload=event.get("data"),
            delta=delta,
            at=time.time(),
            ignored=not took,
            reason=None
            if took
            else ("no guard passed" if refusal.guards else "not allowed in this state"),
            transition=taken[0] if took and taken else None,
        )
        after = InstanceSnapshot(
            self.id, snap.machine, record.target, session.data, record.seq, session.dump()
        )
        change = _timer_change(self.id, session, record.seq, self.clock(), timer)
        return _Step(definition, session, after, record, change, None)

    def _refusal(self, snap: InstanceSnapshot, event: str) -> TransitionNotAllowed:
        allowed = self.allowed_events()
        named = [t for n in self._active() for t in n.transitions if t.matches(event)]
        guards = [t.cond.text for t in named if t.cond is not None]
        return TransitionNotAllowed(event, snap.state, allowed, guards=guards)

    def _commit(self, step: _Step) -> tuple[TransitionRecord, bool]:
        """Save what :meth:`_advance` decided (or raise its refusal); returns the saved
        record and whether it is this call's (not an earlier one with the same id)."""
        self.microsteps = step.session.trace
        self.logs = step.session.logs
        if step.refusal is not None:
            self._refusal_listeners.notify(step.refusal)
            raise step.refusal
        after, record = step.after, step.record
        assert after is not None
        assert record is not None
        with self._lock:
            if self._definition is not step.definition:
                missing = sorted(set(after.chart["configuration"]) - set(self._chart.nodes))
                if missing:
                    raise IncompatibleMachine(
                        self.id,
                        f"its definition was replaced while event {record.event!r} was "
                        f"processed and the new one has no state {missing[0]!r}; nothing was "
                        "saved, so send the event again",
                    )
            saved = self.store.commit(after, record, step.timers)
        fresh = saved.seq == record.seq and saved.at == record.at
        if fresh and not saved.ignored:  # outside the lock: a listener may send events
            _chart_of(step.definition).listeners.notify(self, saved)
        return saved, fresh


ChartInstance = MachineInstance
"""The name the statechart documentation uses: the same class."""


@dataclass(slots=True)
class _Step:
    """What one event did, before it is saved: the new snapshot, its record and timer
    changes, or the refusal a strict instance raises."""

    definition: Definition
    session: Session
    after: InstanceSnapshot | None
    record: TransitionRecord | None
    timers: TimerChange | None
    refusal: TransitionNotAllowed | None


_MISSING = object()


def _chart_of(definition: Definition) -> Statechart:
    if isinstance(definition, StateMachine):
        return definition.chart
    return definition


def _external(event: object, payload: Any) -> dict[str, Any]:
    return new_event(str(event), payload)


def _summary(session: Session) -> str:
    atomic = sorted((n for n in session.configuration if n.is_atomic), key=lambda n: n.order)
    return " ".join(n.id for n in atomic)


def _incompatibility(snap: InstanceSnapshot, name: str, chart: Statechart) -> str | None:
    if name != snap.machine:
        return f"it was started by machine {snap.machine!r}, not {name!r}"
    missing = [i for i in snap.chart["configuration"] if i not in chart.nodes]
    if len(missing) == 1:
        return f"it is in state {missing[0]!r}, which the new definition does not have"
    if missing:
        return f"it is in states {missing}, which the new definition does not have"
    return None


def _timer_event(t: TimerRequest) -> dict[str, Any]:
    if not (t.route or t.sender):
        return t.event
    return {**t.event, ROUTE: {"to": list(t.route), "from": list(t.sender)}}


def _timer_change(
    instance_id: str, session: Session, seq: int, now: float, fired: TimerRecord | None
) -> TimerChange | None:
    if not (session.timers or session.cancelled or fired):
        return None
    add = tuple(
        TimerRecord(
            instance_id,
            f"{seq:010d}.{n:04d}",
            t.event["name"],
            _timer_event(t),
            now + t.delay,
            t.sendid,
        )
        for n, t in enumerate(session.timers)
    )
    return TimerChange(add, tuple(session.cancelled), None if fired is None else fired.key)


def machine_store(store: MachineStore | Checkpointer) -> MachineStore:
    """``store`` itself, or — for a workflow checkpointer — the machine store inside it."""
    inner: MachineStore | None = getattr(store, "machines", None)
    return inner if inner is not None else store  # type: ignore[return-value]


def start_instance(
    definition: Definition,
    instance_id: str | None,
    context: Mapping[str, Any] | None,
    *,
    store: MachineStore | Checkpointer | None,
    strict: bool,
    clock: Clock | None = None,
) -> MachineInstance:
    """Create an instance and run it to its first stable configuration (what
    ``machine.start`` and ``chart.start`` call).

    A flat machine starts in its initial state without running that state's on-enter
    hooks (pass starting data in ``context``); a statechart enters its initial
    configuration as SCXML says, running entry content and eventless transitions.
    """
    chart = _chart_of(definition)
    if context is not None and not isinstance(context, Mapping):
        raise InvalidState("context", f"is a {type(context).__name__}, not a dict")
    check(dict(context or {}), root="context")
    iid = instance_id if instance_id is not None else uuid.uuid4().hex
    found = machine_store(store) if store is not None else MemoryMachineStore()
    session = Session(chart, iid)
    session.data.update(loads(dumps(dict(context or {}))))
    if isinstance(definition, StateMachine):
        session.configuration = {chart.nodes[definition.initial]}
    else:
        session.start()
        session.drain()
    check(session.data, root="context")
    clock = clock or wall_clock
    snap = InstanceSnapshot(iid, chart.name, _summary(session), session.data, 0, session.dump())
    found.create(snap, _timer_change(iid, session, 0, clock(), None))
    instance = MachineInstance(definition, iid, store=found, strict=strict, clock=clock)
    instance.microsteps = session.trace
    instance.logs = session.logs
    return instance


def resume_instance(
    definition: Definition,
    instance_id: str,
    *,
    store: MachineStore | Checkpointer,
    strict: bool,
    clock: Clock | None = None,
) -> MachineInstance:
    """Attach to an instance kept in ``store`` (what ``machine.resume`` calls).

    Raises:
        InstanceNotFound: ``store`` has no such instance.
        IncompatibleMachine: it was started by another machine or is in a state this
            definition does not have.
    """
    chart = _chart_of(definition)
    found = machine_store(store)
    snap = found.load(instance_id)
    if snap is None:
        raise InstanceNotFound(instance_id)
    reason = _incompatibility(snap, definition.name, chart)
    if reason is not None:
        raise IncompatibleMachine(instance_id, reason)
    return MachineInstance(
        definition, instance_id, store=found, strict=strict, clock=clock or wall_clock
    )


def rebind_all(
    instances: Iterable[MachineInstance], machine: Definition
) -> list[tuple[MachineInstance, str]]:
    """Move every instance to ``machine``, or none of them.

    Returns:
        ``(instance, reason)`` for each instance that cannot follow ``machine``; when the
        list is empty, all instances were moved.
    """
    chart = _chart_of(machine)
    ordered = sorted(set(instances), key=id)
    with contextlib.ExitStack() as stack:
        # A fixed lock order, so two concurrent rebinds cannot deadlock.
        for instance in ordered:
            stack.enter_context(instance._lock)
        refusals = [
            (i, r)
            for i in ordered
            if (r := _incompatibility(i._snapshot(), machine.name, chart)) is not None
        ]
        if not refusals:
            for instance in ordered:
                instance._definition, instance._chart = machine, chart
    return refusals
