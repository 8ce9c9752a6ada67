"""State-machine definitions: states, transitions, guards, hooks — and the pure decision.

A :class:`StateMachine` is a definition, not a running thing: it says which states exist,
which event moves which state where, under which guard, and what runs on the way. Running
instances (:meth:`StateMachine.start`) keep their own state and *context*: the state is just
the node; the data lives in the context, a JSON dict kept beside it. A frozen machine
compiles to the statechart it is (:attr:`StateMachine.chart`, ``agentnb.fsm.flat``), and
its instances run on the one statechart interpreter.

Example:
    >>> from enum import Enum, auto
    >>> class Light(Enum):
    ...     RED = auto()
    ...     GREEN = auto()
    ...     YELLOW = auto()
    >>> lights = StateMachine("traffic_light", states=Light, initial=Light.RED)
    >>> _ = lights.add_transition(Light.RED, "timer", Light.GREEN)
    >>> _ = lights.add_transition(Light.GREEN, "timer", Light.YELLOW)
    >>> _ = lights.add_transition(Light.YELLOW, "timer", Light.RED)
    >>> lights.decide(Light.RED, "timer", {}).target
    'GREEN'
    >>> lights.allowed_events(Light.GREEN)
    ['timer']
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeAlias

from agentnb._display import Drawable
from agentnb._listeners import Listeners
from agentnb.errors import DefinitionError
from agentnb.fsm.chart import Statechart
from agentnb.fsm.flat import compile_machine
from agentnb.fsm.rules import (
    EdgeSpec,
    Finding,
    check_edge,
    check_states,
    check_table,
    is_valid_name,
)
from agentnb.resilience import CircuitBreaker, Retry

if TYPE_CHECKING:
    from agentnb.fsm.instance import MachineInstance, MachineStore
    from agentnb.store.base import Checkpointer

__all__ = ["Action", "Context", "Guard", "Hook", "StateLike", "StateMachine", "Transition"]

Context: TypeAlias = dict[str, Any]
Guard: TypeAlias = Callable[[Context, Any], bool | Awaitable[bool]]
"""``guard(context, payload) -> bool``, sync or async. It gets a copy of the context."""
Action: TypeAlias = Callable[
    [Context, Any], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None
]
"""``action(context, payload) -> delta | None``, sync or async; the delta updates the context."""
Hook: TypeAlias = Action
"""On-enter and on-exit hooks have the same shape as actions."""
StateLike: TypeAlias = Enum | str


def callable_name(fn: Callable[..., Any] | None) -> str | None:
    """The name shown for a guard, action or hook (``None`` when there is none)."""
    if fn is None:
        return None
    return str(getattr(fn, "__name__", None) or repr(fn))


@dataclass(frozen=True, slots=True)
class Transition:
    """One declared transition. ``index`` is its position in declaration order.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> transition = door.add_transition("closed", "push", "open", label="push it")
        >>> transition.source, transition.event, transition.target, transition.index
        ('closed', 'push', 'open', 0)
    """

    source: str
    event: str
    target: str
    guard: Guard | None = None
    action: Action | None = None
    label: str | None = None
    index: int = 0
    timeout: float | None = None
    """Seconds the action may take (see ``agentnb.resilience``)."""
    retry: Retry | None = None
    breaker: CircuitBreaker | None = None

    def __str__(self) -> str:
        guard = f" [{callable_name(self.guard)}]" if self.guard is not None else ""
        return f"{self.source} --{self.event}{guard}--> {self.target}"

    @property
    def spec(self) -> EdgeSpec:
        """The transition as the definition rules see it."""
        return EdgeSpec(self.index, self.source, self.event, self.target, self.guard is not None)


def _timeout(value: float | None, event: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise DefinitionError(
            f"transition on {event!r}: timeout={value!r} must be a positive number of seconds",
            culprit=event,
        )
    return float(value)


def _breaker(value: CircuitBreaker | None, event: str) -> CircuitBreaker | None:
    if value is not None and not isinstance(value, CircuitBreaker):
        raise DefinitionError(
            f"transition on {event!r}: breaker={value!r} is not a CircuitBreaker", culprit=event
        )
    return value


def _raise_first(findings: list[Finding]) -> None:
    if not findings:
        return
    first = findings[0]
    more = f" (and {len(findings) - 1} more problems)" if len(findings) > 1 else ""
    raise DefinitionError(first.message + more, culprit=first.culprit or None, fix=first.fix)


class StateMachine(Drawable):
    """A state-machine definition, built in code or loaded with :func:`load_machine`.

    Args:
        name: the machine's name (letters, digits, ``_ . -``).
        states: an ``Enum`` class (its member names are the state names) or a list of names.
        initial: the state new instances start in.
        final: states that end an instance; they accept no events.
        description: free text shown with the machine.

    Raises:
        DefinitionError: a name is invalid, a state repeats, or ``initial``/``final`` name a
            state that does not exist.

    The definition can change until the first instance starts (or :meth:`freeze` is
    called); after that it is fixed, so running instances never see it move under them.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open", "gone"], initial="closed",
        ...                     final=["gone"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> _ = door.add_transition("open", "pull", "closed")
        >>> _ = door.add_transition("open", "remove", "gone")
        >>> front = door.start("front")
        >>> front.send("push").target, front.allowed_events()
        ('open', ['pull', 'remove'])
        >>> door.decide("closed", "push", {}).target  # the pure transition function, no instance
        'open'
    """

    def __init__(
        self,
        name: str,
        states: type[Enum] | Iterable[str],
        initial: StateLike,
        final: Iterable[StateLike] = (),
        *,
        description: str = "",
    ) -> None:
        if not is_valid_name(name):
            raise DefinitionError(
                f"machine name {name!r} is not a valid name",
                culprit=str(name),
                fix="Use letters, digits, '_', '.' and '-', starting with a letter or '_'",
            )
        self.name = name
        self.description = description
        self._enum: type[Enum] | None = None
        if isinstance(states, type) and issubclass(states, Enum):
            self._enum = states
            self._values: dict[str, StateLike] = {member.name: member for member in states}
            names = list(self._values)
        elif isinstance(states, str):
            raise DefinitionError(
                f"states must be an Enum class or a list of names, not the string {states!r}",
                culprit=states,
                fix=f"Write states=[{states!r}, ...]",
            )
        else:
            names = [self._plain_name(s, "state") for s in states]
            self._values = {s: s for s in names}
        self._states = tuple(names)
        self._initial = self._plain_name(initial, "initial state")
        self._final = tuple(self._plain_name(s, "final state") for s in final)
        _raise_first(check_states(names, self._initial, self._final))
        self._transitions: list[Transition] = []
        self._by_key: dict[tuple[str, str], list[Transition]] = {}
        self._enter: dict[str, list[Hook]] = {}
        self._exit: dict[str, list[Hook]] = {}
        self._frozen = False
        self.listeners: Listeners[[Any, Any]] = Listeners("machine")

    def subscribe(self, listener: Callable[[Any, Any], object]) -> Callable[[], None]:
        """Call ``listener(instance, record)`` after every transition an instance commits.

        Not called for ignored events or for a repeated ``event_id``. Listeners are not part
        of the definition (a frozen machine accepts them); they run outside the instance's
        lock, and one that raises is reported with a :class:`RuntimeWarning`. Returns an
        unsubscribe function (calling it twice is harmless).
        """
        return self.listeners.add(listener)

    def __repr__(self) -> str:
        return (
            f"<StateMachine {self.name!r}: {len(self._states)} states, "
            f"{len(self._transitions)} transitions, initial {self._initial!r}>"
        )

    # -- reading the definition -------------------------------------------------------

    @property
    def states(self) -> tuple[str, ...]:
        """State names in declaration order."""
        return self._states

    @property
    def initial(self) -> str:
        """The name of the state new instances start in."""
        return self._initial

    @property
    def final(self) -> tuple[str, ...]:
        """Names of the final states."""
        return self._final

    @property
    def transitions(self) -> tuple[Transition, ...]:
        """Every transition, in declaration order."""
        return tuple(self._transitions)

    @property
    def events(self) -> tuple[str, ...]:
        """Every event some transition accepts, in order of first declaration."""
        return tuple(dict.fromkeys(t.event for t in self._transitions))

    def state_value(self, state: StateLike) -> StateLike:
        """The value users see for a state: the ``Enum`` member, or the name itself."""
        return self._values[self._known(state)]

    def allowed_events(self, state: StateLike) -> list[str]:
        """Events that have a transition out of ``state`` (guards not evaluated)."""
        name = self._known(state)
        return list(dict.fromkeys(t.event for t in self._transitions if t.source == name))

    def enter_hooks(self, state: StateLike) -> tuple[Hook, ...]:
        """The on-enter hooks of ``state``, in registration order."""
        return tuple(self._enter.get(self._known(state), ()))

    def exit_hooks(self, state: StateLike) -> tuple[Hook, ...]:
        """The on-exit hooks of ``state``, in registration order."""
        return tuple(self._exit.get(self._known(state), ()))

    # -- building ---------------------------------------------------------------------

    def add_transition(
        self,
        source: StateLike,
        event: str,
        target: StateLike,
        *,
        guard: Guard | None = None,
        action: Action | None = None,
        label: str | None = None,
        timeout: float | None = None,
        retry: Retry | int | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> Transition:
        """Declare that ``event`` moves ``source`` to ``target``.

        Several transitions may share a source and event when guarded: the first whose guard
        passes wins, in declaration order, and at most one unguarded transition may come
        last as the fallback. ``timeout``, ``retry`` and ``breaker`` guard the action as they
        guard a workflow node (``agentnb.resilience``); a failed action leaves the
        instance where it was.

        Raises:
            DefinitionError: an unknown state, an invalid event name, an outgoing transition
                from a final state, a second unguarded or an unreachable guarded transition,
                or a frozen machine.
        """
        self._check_mutable()
        if not isinstance(event, str):
            raise DefinitionError(
                f"event {event!r} is a {type(event).__name__}, not a str",
                culprit=repr(event),
                fix="Name events with strings",
            )
        transition = Transition(
            source=self._plain_name(source, "source state"),
            event=event,
            target=self._plain_name(target, "target state"),
            guard=guard,
            action=action,
            label=label,
            index=len(self._transitions),
            timeout=_timeout(timeout, event),
            retry=Retry.coerce(retry),
            breaker=_breaker(breaker, event),
        )
        same = self._by_key.get((transition.source, transition.event), [])
        fallback = next((t.spec for t in same if t.guard is None), None)
        _raise_first(check_edge(transition.spec, set(self._states), set(self._final), fallback))
        self._transitions.append(transition)
        self._by_key.setdefault((transition.source, transition.event), []).append(transition)
        return transition

    def on_enter(self, state: StateLike, hook: Hook) -> None:
        """Run ``hook(context, payload)`` whenever a transition enters ``state``."""
        self._check_mutable()
        self._enter.setdefault(self._known(state), []).append(hook)

    def on_exit(self, state: StateLike, hook: Hook) -> None:
        """Run ``hook(context, payload)`` whenever a transition leaves ``state``."""
        self._check_mutable()
        self._exit.setdefault(self._known(state), []).append(hook)

    def validate(self) -> None:
        """Check the whole definition, including reachability and dead ends.

        Raises:
            DefinitionError: for the first problem found (the message counts the others).
        """
        specs = [t.spec for t in self._transitions]
        _raise_first(check_table(self._states, self._initial, self._final, specs))

    def freeze(self) -> StateMachine:
        """Validate, then refuse further changes. :meth:`start` does this for you."""
        if not self._frozen:
            self.validate()
            self._chart = compile_machine(self)
            self._frozen = True
        return self

    @property
    def chart(self) -> Statechart:
        """The statechart this machine runs as (``agentnb.fsm.flat``); freezes it."""
        self.freeze()
        return self._chart

    # -- deciding ---------------------------------------------------------------------

    def decide(
        self, state: StateLike, event: str, context: Mapping[str, Any], payload: Any = None
    ) -> Transition | None:
        """The transition ``event`` takes from ``state``, or ``None`` if none applies.

        Pure: it calls guards (with a copy of ``context``) and nothing else — no hooks, no
        actions, no storage. Only sync guards can run here; use :meth:`adecide` when a
        guard is async.

        Raises:
            DefinitionError: ``state`` is unknown, a guard is async, or a guard returned
                something other than a bool.
        """
        for transition in self._candidates(state, event):
            if transition.guard is None:
                return transition
            result = transition.guard(copy.deepcopy(dict(context)), payload)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()  # never awaited on purpose; closing avoids the warning
                raise DefinitionError(
                    f"guard {callable_name(transition.guard)!r} of {transition} is async, "
                    "so decide() cannot run it",
                    culprit=str(transition),
                    fix="Use `await machine.adecide(...)`, or send events with "
                    "instance.send()/asend(), which run async guards",
                )
            if _guard_passed(transition, result):
                return transition
        return None

    async def adecide(
        self, state: StateLike, event: str, context: Mapping[str, Any], payload: Any = None
    ) -> Transition | None:
        """Like :meth:`decide`, awaiting guards that are async."""
        for transition in self._candidates(state, event):
            if transition.guard is None:
                return transition
            result = transition.guard(copy.deepcopy(dict(context)), payload)
            if inspect.isawaitable(result):
                result = await result
            if _guard_passed(transition, result):
                return transition
        return None

    def transitions_for(self, state: StateLike, event: str) -> tuple[Transition, ...]:
        """The transitions declared for ``(state, event)``, in the order guards are tried."""
        return tuple(self._candidates(state, event))

    # -- running ----------------------------------------------------------------------

    def start(
        self,
        instance_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        *,
        strict: bool = True,
        store: MachineStore | Checkpointer | None = None,
    ) -> MachineInstance:
        """Freeze the definition and start an instance in the initial state.

        Args:
            instance_id: the instance's id (a random one when omitted).
            context: the instance's starting data; must be JSON-serialisable.
            strict: when False, events not allowed now are recorded in the history as
                ignored instead of raising :class:`~agentnb.errors.TransitionNotAllowed`.
            store: where the instance lives (a new in-memory store when omitted).

        The initial state's on-enter hooks do not run: pass starting data in ``context``.
        """
        # Imported here because instances build on definitions, not the other way round.
        from agentnb.fsm.instance import start_instance

        return start_instance(self, instance_id, context, strict=strict, store=store)

    def resume(
        self, instance_id: str, *, store: MachineStore | Checkpointer, strict: bool = True
    ) -> MachineInstance:
        """Attach to an instance kept in ``store`` (e.g. by another process).

        Raises:
            InstanceNotFound: ``store`` has no such instance.
            IncompatibleMachine: it was started by another machine or sits in a state this
                definition does not have.
        """
        from agentnb.fsm.instance import resume_instance

        return resume_instance(self, instance_id, strict=strict, store=store)

    # -- internals --------------------------------------------------------------------

    def _candidates(self, state: StateLike, event: str) -> list[Transition]:
        return self._by_key.get((self._known(state), event), [])

    def _plain_name(self, state: object, what: str) -> str:
        """The name of ``state`` without checking that it exists (the rules do that)."""
        if isinstance(state, Enum):
            if self._enum is not None and not isinstance(state, self._enum):
                raise DefinitionError(
                    f"{what} {state!r} belongs to {type(state).__name__}, not to the "
                    f"machine's states {self._enum.__name__}",
                    culprit=str(state),
                    fix=f"Use a member of {self._enum.__name__}",
                )
            return state.name
        if isinstance(state, str):
            return state
        raise DefinitionError(
            f"{what} {state!r} is a {type(state).__name__}, not an Enum member or a str",
            culprit=repr(state),
            fix="Name states with an Enum member or a string",
        )

    def _known(self, state: StateLike) -> str:
        name = self._plain_name(state, "state")
        if name not in self._values:
            raise DefinitionError(
                f"machine {self.name!r} has no state {name!r}",
                culprit=name,
                fix=f"Use one of: {', '.join(self._states)}",
            )
        return name

    def _check_mutable(self) -> None:
        if self._frozen:
            raise DefinitionError(
                f"machine {self.name!r} is frozen: instances run on it",
                culprit=self.name,
                fix="Build a new StateMachine with the change; move live instances to it "
                "with instance.rebind(new_machine)",
            )


def _guard_passed(transition: Transition, result: object) -> bool:
    # A guard that forgets to return gives None; treating that as False would hide the bug.
    if not isinstance(result, bool):
        raise DefinitionError(
            f"guard {callable_name(transition.guard)!r} of {transition} returned "
            f"{type(result).__name__} {result!r}, not a bool",
            culprit=str(transition),
            fix="Return True or False from the guard",
        )
    return result
