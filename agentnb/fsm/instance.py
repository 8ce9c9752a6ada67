"""Running state machines: instances, their events, and where they are kept.

An instance is an id, a definition and a store. Its state, context and history live in the
store (:class:`MachineStore`), so another process with the same store sees the same
instance; the in-memory store here keeps the same rules as a database would.

Processing an event is all-or-nothing: guards decide, then the source's on-exit hooks, the
transition's action and the target's on-enter hooks run on a copy of the context, and only
then is the new state saved *together with* the event's record. If anything raises, nothing
is saved. An event id that was already processed returns its recorded result and runs
nothing again.

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
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from agentnb._aio import run_sync
from agentnb._display import Drawable, MachineViewable
from agentnb._json import check, dumps, loads
from agentnb._listeners import Listeners
from agentnb.errors import (
    DefinitionError,
    IncompatibleMachine,
    InstanceNotFound,
    InvalidState,
    TransitionNotAllowed,
)
from agentnb.fsm.machine import StateLike, StateMachine, Transition, callable_name
from agentnb.fsm.memory import MemoryMachineStore
from agentnb.fsm.records import InstanceSnapshot, TimerRecord, TransitionRecord
from agentnb.fsm.storage import MachineStore, incoming
from agentnb.resilience import guarded_call

if TYPE_CHECKING:
    from agentnb.store.base import Checkpointer

__all__ = ["MachineInstance", "MachineStore", "rebind_all"]


class MachineInstance(Drawable, MachineViewable):
    """One running instance of a :class:`StateMachine`. Create it with ``machine.start()``.

    Attributes:
        id: the instance id.
        strict: when False, events not allowed now are recorded as ignored, not raised.
        store: where the instance's state, context and history live.

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
        self, machine: StateMachine, instance_id: str, *, store: MachineStore, strict: bool
    ) -> None:
        self.id = instance_id
        self.strict = strict
        self.store = store
        self._machine = machine
        # Held only for the short commit and rebind sections, never across an await.
        self._lock = threading.Lock()
        self._refusal_listeners: Listeners[[TransitionNotAllowed]] = Listeners("refusal")

    def __repr__(self) -> str:
        snap = self._snapshot()
        return (
            f"<MachineInstance {self.id!r} of {self._machine.name!r}: "
            f"state {snap.state!r}, {snap.seq} events>"
        )

    @property
    def machine(self) -> StateMachine:
        """The definition this instance follows (it changes on :meth:`rebind`)."""
        return self._machine

    @property
    def current(self) -> StateLike:
        """The current state: an ``Enum`` member if the machine was built from one."""
        return self._machine.state_value(self._snapshot().state)

    @property
    def state(self) -> str:
        """The current state's name."""
        return self._snapshot().state

    @property
    def context(self) -> dict[str, Any]:
        """A copy of the instance's data; change it through actions and hooks."""
        return self._snapshot().context

    @property
    def history(self) -> list[TransitionRecord]:
        """Every processed event, in order."""
        return self.store.history(self.id)

    @property
    def is_final(self) -> bool:
        """True once the instance is in a final state."""
        return self._snapshot().state in self._machine.final

    @property
    def configuration(self) -> frozenset[str]:
        """The active states: for a flat machine, just the current one."""
        return frozenset({self._snapshot().state})

    def in_state(self, state: StateLike) -> bool:
        """Whether ``state`` is active (the flat case of a statechart's configuration)."""
        return self._snapshot().state == self._machine._plain_name(state, "state")

    def timers(self) -> list[TimerRecord]:
        """Pending delayed events: a flat machine schedules none."""
        return self.store.timers(self.id)

    def run_due(self, now: float | None = None) -> list[TransitionRecord]:
        """Fire due timers: a flat machine has none, so nothing happens."""
        return []

    def allowed_events(self) -> list[str]:
        """Events with a transition out of the current state (guards not evaluated)."""
        return self._machine.allowed_events(self._snapshot().state)

    def send(
        self, event: str, payload: Any = None, event_id: str | None = None
    ) -> TransitionRecord:
        """Process ``event`` and return its record. The sync twin of :meth:`asend`."""
        return run_sync(self.asend(event, payload, event_id))

    async def asend(
        self, event: str, payload: Any = None, event_id: str | None = None
    ) -> TransitionRecord:
        """Process ``event``: decide, run hooks and action, save state and record together.

        Args:
            event: the event name.
            payload: JSON data for guards, actions and hooks; kept in the record.
            event_id: a unique id for this event; sending an id again returns the first
                result and does nothing (a random id is used when omitted).

        Raises:
            TransitionNotAllowed: the event has no transition now, or no guard passed
                (only when ``strict``); nothing changes.
            InvalidState: the payload or the resulting context is not JSON.
            StoreError: another send on this instance committed first; nothing was saved.
        """
        machine = self._machine
        payload, done = incoming(self.store, self.id, payload, event_id)
        if done is not None:
            return done
        snap = self._snapshot()
        transition: Transition | None = None
        if isinstance(event, str):
            transition = await machine.adecide(snap.state, event, snap.context, payload)
        if transition is None:
            return self._refuse(machine, snap, event, payload, event_id)
        work = snap.context
        delta: dict[str, Any] = {}
        steps: list[tuple[str, Callable[..., Any]]] = [
            (f"on_exit hook {callable_name(h)!r} of {snap.state!r}", h)
            for h in machine.exit_hooks(snap.state)
        ]
        if transition.action is not None:
            steps.append((f"action {callable_name(transition.action)!r}", transition.action))
        steps += [
            (f"on_enter hook {callable_name(h)!r} of {transition.target!r}", h)
            for h in machine.enter_hooks(transition.target)
        ]
        for what, fn in steps:
            if fn is transition.action and _guarded(transition):
                result = await guarded_call(
                    fn,
                    lambda work=work: (copy.deepcopy(work), payload),  # type: ignore[misc]
                    timeout=transition.timeout,
                    retry=transition.retry,
                    breaker=transition.breaker,
                    is_async=inspect.iscoroutinefunction(fn),
                    owner=self.id,
                    name=str(callable_name(fn)),
                    report=lambda type, data: None,
                    what="action",
                )
            else:
                result = fn(copy.deepcopy(work), payload)
                if inspect.isawaitable(result):
                    result = await result
            _merge(work, delta, result, what, transition)
        check(work, root="context")
        record = self._record(
            snap, event, event_id, transition.target, payload, delta, None, transition.index
        )
        after = InstanceSnapshot(self.id, snap.machine, transition.target, work, record.seq)
        return self._commit(machine, after, record)

    def on_refused(self, listener: Callable[[TransitionNotAllowed], object]) -> Callable[[], None]:
        """Call ``listener(error)`` whenever this instance refuses an event.

        A strict instance raises :class:`~agentnb.errors.TransitionNotAllowed` and records
        nothing, so this is how a panel showing the instance hears of it; the caller still
        gets the error (a listener that raises is reported with a :class:`RuntimeWarning`).
        Returns a function that removes the listener (safe to call twice).
        """
        return self._refusal_listeners.add(listener)

    def rebind(self, machine: StateMachine) -> None:
        """Follow ``machine`` from the next event on (e.g. a reloaded definition).

        Raises:
            IncompatibleMachine: the instance's current state is not in ``machine``, or
                ``machine`` has another name; the instance keeps its definition.
        """
        machine.freeze()
        with self._lock:
            reason = self._incompatibility(machine)
            if reason is not None:
                raise IncompatibleMachine(self.id, reason)
            self._machine = machine

    # -- internals --------------------------------------------------------------------

    def _snapshot(self) -> InstanceSnapshot:
        snap = self.store.load(self.id)
        if snap is None:
            raise InstanceNotFound(self.id)
        return snap

    def _incompatibility(self, machine: StateMachine) -> str | None:
        snap = self._snapshot()
        if machine.name != snap.machine:
            return f"it was started by machine {snap.machine!r}, not {machine.name!r}"
        if snap.state not in machine.states:
            return f"it is in state {snap.state!r}, which the new definition does not have"
        return None

    def _record(
        self,
        snap: InstanceSnapshot,
        event: str,
        event_id: str | None,
        target: str,
        payload: Any,
        delta: dict[str, Any],
        reason: str | None = None,
        transition: int | None = None,
    ) -> TransitionRecord:
        return TransitionRecord(
            instance_id=self.id,
            seq=snap.seq + 1,
            event=str(event),
            event_id=event_id if event_id is not None else uuid.uuid4().hex,
            source=snap.state,
            target=target,
            payload=payload,
            delta=delta,
            at=time.time(),
            ignored=reason is not None,
            reason=reason,
            transition=transition,
        )

    def _refuse(
        self,
        machine: StateMachine,
        snap: InstanceSnapshot,
        event: object,
        payload: Any,
        event_id: str | None,
    ) -> TransitionRecord:
        allowed = machine.allowed_events(snap.state)
        guarded = event if isinstance(event, str) and event in allowed else None
        reason = "no guard passed" if guarded else "not allowed in this state"
        if self.strict:
            guards: list[str] = []
            if guarded is not None:
                guards = [
                    str(callable_name(t.guard))
                    for t in machine.transitions_for(snap.state, guarded)
                ]
            error = TransitionNotAllowed(str(event), snap.state, allowed, guards=guards)
            self._refusal_listeners.notify(error)
            raise error
        record = self._record(snap, str(event), event_id, snap.state, payload, {}, reason)
        after = InstanceSnapshot(self.id, snap.machine, snap.state, snap.context, record.seq)
        return self._commit(machine, after, record)

    def _commit(
        self, decided_by: StateMachine, after: InstanceSnapshot, record: TransitionRecord
    ) -> TransitionRecord:
        with self._lock:
            if self._machine is not decided_by and after.state not in self._machine.states:
                raise IncompatibleMachine(
                    self.id,
                    f"its definition was replaced while event {record.event!r} was processed "
                    f"and the new one has no state {after.state!r}; nothing was saved, so "
                    "send the event again",
                )
            saved = self.store.commit(after, record)
        fresh = saved.seq == record.seq and saved.at == record.at
        if fresh and not saved.ignored:  # outside the lock: a listener may send events
            decided_by.listeners.notify(self, saved)
        return saved


def _merge(
    work: dict[str, Any], delta: dict[str, Any], result: object, what: str, t: Transition
) -> None:
    if result is None:
        return
    if not isinstance(result, Mapping):
        raise DefinitionError(
            f"{what} of {t} returned a {type(result).__name__}, not a dict or None",
            culprit=what,
            fix="Return a dict of the context keys to set (a delta), or None",
        )
    for key in result:
        if not isinstance(key, str):
            raise InvalidState(f"context[{key!r}]", f"the key set by {what} is not a str")
    update = copy.deepcopy(dict(result))
    work.update(update)
    delta.update(update)


def _guarded(transition: Transition) -> bool:
    return (
        transition.timeout is not None
        or transition.retry is not None
        or transition.breaker is not None
    )


def machine_store(store: MachineStore | Checkpointer) -> MachineStore:
    """``store`` itself, or — for a workflow checkpointer — the machine store inside it."""
    inner: MachineStore | None = getattr(store, "machines", None)
    return inner if inner is not None else store  # type: ignore[return-value]


def start_instance(
    machine: StateMachine,
    instance_id: str | None,
    context: Mapping[str, Any] | None,
    *,
    strict: bool,
    store: MachineStore | Checkpointer | None,
) -> MachineInstance:
    """Create an instance in ``machine``'s initial state (what ``machine.start`` calls)."""
    machine.freeze()
    if context is None:
        context = {}
    if not isinstance(context, Mapping):
        raise InvalidState("context", f"is a {type(context).__name__}, not a dict")
    check(dict(context), root="context")
    iid = instance_id if instance_id is not None else uuid.uuid4().hex
    found = machine_store(store) if store is not None else MemoryMachineStore()
    start = InstanceSnapshot(iid, machine.name, machine.initial, loads(dumps(dict(context))), 0)
    found.create(start)
    return MachineInstance(machine, iid, store=found, strict=strict)


def resume_instance(
    machine: StateMachine, instance_id: str, *, strict: bool, store: MachineStore | Checkpointer
) -> MachineInstance:
    """Attach to an instance kept in ``store`` (what ``machine.resume`` calls)."""
    machine.freeze()
    found = machine_store(store)
    if found.load(instance_id) is None:
        raise InstanceNotFound(instance_id)
    instance = MachineInstance(machine, instance_id, store=found, strict=strict)
    reason = instance._incompatibility(machine)
    if reason is not None:
        raise IncompatibleMachine(instance_id, reason)
    return instance


def rebind_all(
    instances: Iterable[MachineInstance], machine: StateMachine
) -> list[tuple[MachineInstance, str]]:
    """Move every instance to ``machine``, or none of them.

    Returns:
        ``(instance, reason)`` for each instance that cannot follow ``machine``; when the
        list is empty, all instances were moved.
    """
    machine.freeze()
    ordered = sorted(set(instances), key=id)
    with contextlib.ExitStack() as stack:
        # A fixed lock order, so two concurrent rebinds cannot deadlock.
        for instance in ordered:
            stack.enter_context(instance._lock)
        refusals = [(i, r) for i in ordered if (r := i._incompatibility(machine)) is not None]
        if not refusals:
            for instance in ordered:
                instance._machine = machine
    return refusals
