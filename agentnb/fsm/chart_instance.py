"""Running statecharts: :class:`ChartInstance`, with durable timers in its store.

An instance keeps nothing important in memory: each event loads the snapshot (datamodel,
configuration, history values), runs the SCXML algorithm (:mod:`agentnb.fsm.interpreter`)
to a stable configuration, and commits the new snapshot, the event's record and the timer
changes (delayed sends added, cancelled ones removed) in one transaction. A delayed event
is a row in the store, not a sleeping task: after a restart :meth:`Statechart.resume` finds
it, and :meth:`ChartInstance.run_due` fires what is due. A timer's firing is recorded under
the event id ``timer:<key>``, so two processes driving one instance fire it once.

It has the flat :class:`~agentnb.fsm.instance.MachineInstance`'s API (``send``/``asend``,
``state``, ``context``, ``history``, ``is_final``, ``allowed_events``, ``configuration``,
``in_state``, ``timers``, ``run_due``), so code and panels drive either one.

Example:
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

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

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
from agentnb.fsm.interpreter import Microstep, Session, TimerRequest, new_event
from agentnb.fsm.memory import MemoryMachineStore
from agentnb.fsm.records import InstanceSnapshot, TimerChange, TimerRecord, TransitionRecord
from agentnb.fsm.storage import MachineStore, incoming
from agentnb.fsm.timers import Clock, wall_clock

if TYPE_CHECKING:
    from agentnb.store.base import Checkpointer

__all__ = ["ChartInstance", "resume_chart", "start_chart"]

MAX_DUE = 10_000  # timers one run_due() call may fire (a timer loop must not spin forever)


def _summary(session: Session) -> str:
    atomic = sorted((n for n in session.configuration if n.is_atomic), key=lambda n: n.order)
    return " ".join(n.id for n in atomic)


class ChartInstance(Drawable, MachineViewable):
    """One running instance of a :class:`~agentnb.fsm.chart.Statechart` (``chart.start()``).

    Attributes:
        id: the instance id (also the SCXML ``_sessionid``).
        strict: raise :class:`TransitionNotAllowed` for an event that enables nothing.
        store: where the snapshot, the event records and the timers live.
        clock: ``clock() -> seconds`` used for delayed events.
        microsteps: what the algorithm did for the last event (transitions taken and
            preempted, exit and entry sets, actions, events queued), for teaching views.

    Example:
        >>> from agentnb import State, Statechart
        >>> light = Statechart("light", [
        ...     State("off", on={"flip": "on"}),
        ...     State("on", on={"flip": "off"}),
        ... ])
        >>> lamp = light.start("lamp-1")
        >>> lamp
        <ChartInstance 'lamp-1' of 'light': ['off']>
        >>> [record.target for record in (lamp.send("flip"), lamp.send("flip"))]
        ['on', 'off']
        >>> [(record.seq, record.event, record.source, record.target) for record in lamp.history]
        [(1, 'flip', 'off', 'on'), (2, 'flip', 'on', 'off')]
    """

    def __init__(
        self,
        chart: Statechart,
        instance_id: str,
        *,
        store: MachineStore,
        strict: bool,
        clock: Clock,
    ) -> None:
        self.id = instance_id
        self.strict = strict
        self.store = store
        self.clock = clock
        self.microsteps: list[Microstep] = []
        self.logs: list[tuple[str, Any]] = []
        self._chart = chart
        self._refusal_listeners: Listeners[[TransitionNotAllowed]] = Listeners("refusal")

    def __repr__(self) -> str:
        return f"<ChartInstance {self.id!r} of {self._chart.name!r}: {sorted(self.configuration)}>"

    # -- reading ------------------------------------------------------------------------

    @property
    def machine(self) -> Statechart:
        """The definition this instance follows."""
        return self._chart

    @property
    def configuration(self) -> frozenset[str]:
        """The ids of every active state, atomic and compound."""
        return frozenset(self._state()["configuration"])

    def in_state(self, state_id: str) -> bool:
        """Whether ``state_id`` is active (``In('id')`` in an expression)."""
        return state_id in self._state()["configuration"]

    @property
    def state(self) -> str:
        """The active atomic states, space-separated, in document order."""
        return self._snapshot().state

    @property
    def current(self) -> str:
        """Same as :attr:`state` (a flat machine's current state)."""
        return self.state

    @property
    def context(self) -> dict[str, Any]:
        """A copy of the datamodel."""
        return self._snapshot().context

    @property
    def history(self) -> list[TransitionRecord]:
        """Every processed external event, in order."""
        return self.store.history(self.id)

    @property
    def is_final(self) -> bool:
        """True once a top-level final state was reached (the session has ended)."""
        return not self._state()["running"]

    def allowed_events(self) -> list[str]:
        """Event descriptors of transitions out of the active states (guards not evaluated)."""
        active = [self._chart.nodes[i] for i in self._state()["configuration"]]
        found: dict[str, None] = {}
        for node in sorted(active, key=lambda n: n.order):
            for t in node.transitions:
                found.update(dict.fromkeys(t.events))
        return list(found)

    def timers(self) -> list[TimerRecord]:
        """Pending delayed events, by fire time."""
        return self.store.timers(self.id)

    # -- driving ------------------------------------------------------------------------

    def send(
        self, event: str, payload: Any = None, event_id: str | None = None
    ) -> TransitionRecord:
        """Process ``event`` and return its record. The sync twin of :meth:`asend`."""
        # Statechart actions are plain functions and the store is synchronous: nothing here
        # awaits, so the sync twin runs the step directly instead of through an event loop.
        return self._deliver(event, payload, event_id)

    async def asend(
        self, event: str, payload: Any = None, event_id: str | None = None
    ) -> TransitionRecord:
        """Process an external event: one macrostep to a stable configuration, then commit.

        Events the chart sends itself without a delay are processed in the same call; delayed
        ones become timers. ``event_id`` makes a repeated send return the first record.

        Raises:
            TransitionNotAllowed: ``strict`` and the event enabled no transition.
            InvalidState: the payload or the resulting datamodel is not JSON.
            InstanceConflict: another process moved the instance on first; nothing saved.
        """
        return self._deliver(event, payload, event_id)

    def _deliver(self, event: str, payload: Any, event_id: str | None) -> TransitionRecord:
        payload, done = incoming(self.store, self.id, payload, event_id)
        if done is not None:
            return done
        saved, _ = self._step(new_event(str(event), payload), event_id, None, strict=self.strict)
        return saved

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
                record, fresh = self._step(dict(timer.data), timer.event_id, timer, strict=False)
            except InstanceConflict:
                continue  # another process stepped the instance: look again
            if fresh:  # not a timer another process fired first
                fired.append(record)
        return fired

    async def arun_due(self, now: float | None = None) -> list[TransitionRecord]:
        """The async twin of :meth:`run_due`."""
        return self.run_due(now)

    def on_refused(self, listener: Callable[[TransitionNotAllowed], object]) -> Callable[[], None]:
        """Call ``listener(error)`` whenever a strict instance refuses an event.

        Returns a function that removes the listener (safe to call twice).
        """
        return self._refusal_listeners.add(listener)

    # -- internals ----------------------------------------------------------------------

    def _snapshot(self) -> InstanceSnapshot:
        snap = self.store.load(self.id)
        if snap is None:
            raise InstanceNotFound(self.id)
        return snap

    def _state(self) -> dict[str, Any]:
        chart = self._snapshot().chart
        assert chart is not None
        return chart

    def _step(
        self,
        event: dict[str, Any],
        event_id: str | None,
        timer: TimerRecord | None,
        *,
        strict: bool,
    ) -> tuple[TransitionRecord, bool]:
        """Process one event and commit; returns the saved record and whether it is ours."""
        snap = self._snapshot()
        if snap.chart is None:
            raise IncompatibleMachine(self.id, "it was started by a flat StateMachine")
        session = Session.restore(self._chart, snap.chart, snap.context)
        before = snap.state
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
        self.microsteps = session.trace
        self.logs = session.logs
        if not took and strict:
            error = TransitionNotAllowed(event["name"], before, self.allowed_events())
            self._refusal_listeners.notify(error)
            raise error
        check(session.data, root="context")
        delta = {k: v for k, v in session.data.items() if snap.context.get(k, _MISSING) != v}
        record = TransitionRecord(
            instance_id=self.id,
            seq=snap.seq + 1,
            event=event["name"],
            event_id=event_id if event_id is not None else _new_id(),
            source=before,
            target=_summary(session),
            payload=event.get("data"),
            delta=delta,
            at=time.time(),
            ignored=not took,
            reason=None if took else "no transition enabled",
        )
        after = InstanceSnapshot(
            self.id, snap.machine, record.target, session.data, record.seq, session.dump()
        )
        change = _timer_change(self.id, session, record.seq, self.clock(), timer)
        saved = self.store.commit(after, record, change)
        fresh = saved.seq == record.seq and saved.at == record.at
        if fresh:
            self._chart.listeners.notify(self, saved)
        return saved, fresh


_MISSING = object()


def _new_id() -> str:
    import uuid

    return uuid.uuid4().hex


ROUTE = "__route__"
"""Key of a stored timer's event that names the invoked session it is for (removed on firing)."""


def _timer_event(t: TimerRequest) -> dict[str, Any]:
    if not (t.route or t.sender):
        return t.event
    return {**t.event, ROUTE: {"to": list(t.route), "from": list(t.sender)}}


def _timer_change(
    instance_id: str, session: Session, seq: int, now: float, fired: TimerRecord | None
) -> TimerChange:
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


def start_chart(
    chart: Statechart,
    instance_id: str | None,
    context: Mapping[str, Any] | None,
    *,
    store: MachineStore | Checkpointer | None,
    clock: Clock | None,
    strict: bool,
) -> ChartInstance:
    """Create an instance and run it to its first stable configuration."""
    if context is not None and not isinstance(context, Mapping):
        raise InvalidState("context", f"is a {type(context).__name__}, not a dict")
    check(dict(context or {}), root="context")
    iid = instance_id if instance_id is not None else _new_id()
    found = machine_store(store) if store is not None else MemoryMachineStore()
    session = Session(chart, iid)
    session.data.update(loads(dumps(dict(context or {}))))
    session.start()
    session.drain()
    check(session.data, root="context")
    clock = clock or wall_clock
    snap = InstanceSnapshot(iid, chart.name, _summary(session), session.data, 0, session.dump())
    found.create(snap, _timer_change(iid, session, 0, clock(), None))
    instance = ChartInstance(chart, iid, store=found, strict=strict, clock=clock)
    instance.microsteps = session.trace
    instance.logs = session.logs
    return instance


def resume_chart(
    chart: Statechart,
    instance_id: str,
    *,
    store: MachineStore | Checkpointer,
    clock: Clock | None,
    strict: bool,
) -> ChartInstance:
    """Attach to an instance kept in ``store`` (what ``chart.resume`` calls)."""
    found = machine_store(store)
    snap = found.load(instance_id)
    if snap is None:
        raise InstanceNotFound(instance_id)
    if snap.machine != chart.name:
        raise IncompatibleMachine(
            instance_id, f"it was started by machine {snap.machine!r}, not {chart.name!r}"
        )
    if snap.chart is None:
        raise IncompatibleMachine(instance_id, "it was started by a flat StateMachine")
    missing = [i for i in snap.chart["configuration"] if i not in chart.nodes]
    if missing:
        raise IncompatibleMachine(
            instance_id, f"it is in states {missing}, which this definition does not have"
        )
    return ChartInstance(chart, instance_id, store=found, strict=strict, clock=clock or wall_clock)
