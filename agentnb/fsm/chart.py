"""Statechart definitions: nested and parallel states, history, final states, timers.

The tree is written with four small records — :class:`State`, :class:`Parallel`,
:class:`Final` and :class:`History` — and a :class:`Statechart` built from them. Transitions
are given per state as ``on={"event": target}``, ``always=[...]`` (eventless) and
``after={seconds: target}``; a target is a state id, a list of ids, or a dict with
``target``, ``guard``, ``action`` and ``internal`` (as in XState). Guards are Python
functions ``guard(context, payload) -> bool`` or safe expressions (``"count > 3 and
In('on')"``); actions are functions ``action(context, payload) -> delta`` or executable
content (:class:`~agentnb.fsm.content.Raise`, ``Send``, ``Cancel``, ``Assign``, ``Log``).
SCXML files (:func:`~agentnb.fsm.scxml.load_scxml`) build the same tree.

Example:
    >>> player = Statechart("player", [
    ...     State("stopped", on={"play": "playing"}),
    ...     State("playing", initial="normal", states=[
    ...         State("normal", on={"ff": "fast"}),
    ...         State("fast", on={"ff": "normal"}),
    ...         History("hist"),
    ...     ], on={"stop": "stopped", "pause": "paused"}),
    ...     State("paused", on={"play": "playing.hist"}),
    ... ])
    >>> p = player.start()
    >>> _ = p.send("play"); _ = p.send("ff"); _ = p.send("pause"); _ = p.send("play")
    >>> sorted(p.configuration)
    ['fast', 'playing']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from agentnb._display import Drawable
from agentnb._listeners import Listeners
from agentnb.errors import DefinitionError
from agentnb.fsm.content import Call, Cancel, Content, Send
from agentnb.fsm.nodes import ROOT, ChartTransition, Condition, Node, finish

if TYPE_CHECKING:
    from agentnb.fsm.instance import MachineInstance, MachineStore
    from agentnb.fsm.timers import Clock
    from agentnb.store.base import Checkpointer

__all__ = ["ChartTransition", "Final", "History", "Node", "Parallel", "State", "Statechart"]

ActionLike: TypeAlias = Callable[[dict[str, Any], Any], Any] | Content
TargetSpec: TypeAlias = str | Sequence[str] | Mapping[str, Any] | None


@dataclass(frozen=True)
class State:
    """A state; with ``states`` it is compound and starts in ``initial`` (or its first child).

    Example:
        A compound state starts in its ``initial`` child; an event the child does not take is
        offered to its parent:

        >>> from agentnb import State, Statechart
        >>> player = Statechart("player", [
        ...     State("on", initial="paused", on={"power": "off"}, states=[
        ...         State("paused", on={"play": "playing"}),
        ...         State("playing", on={"pause": "paused"}),
        ...     ]),
        ...     State("off"),
        ... ])
        >>> radio = player.start()
        >>> sorted(radio.configuration)
        ['on', 'paused']
        >>> _ = radio.send("play")
        >>> sorted(radio.configuration)
        ['on', 'playing']
        >>> _ = radio.send("power")  # taken by the parent, whatever child is active
        >>> sorted(radio.configuration)
        ['off']
    """

    id: str
    states: Sequence[State | Parallel | Final | History] = ()
    initial: str | Sequence[str] | None = None
    on: Mapping[str, TargetSpec | Sequence[TargetSpec]] = field(default_factory=dict)
    always: TargetSpec | Sequence[TargetSpec] = ()
    after: Mapping[float, TargetSpec] = field(default_factory=dict)
    on_enter: ActionLike | Sequence[ActionLike] = ()
    on_exit: ActionLike | Sequence[ActionLike] = ()


@dataclass(frozen=True)
class Parallel:
    """A state whose children (regions) are all active at once.

    Example:
        Both regions are active at once; one event can move each of them:

        >>> from agentnb import Parallel, State, Statechart
        >>> desk = Statechart("desk", [
        ...     Parallel("working", states=[
        ...         State("lamp", states=[State("dark", on={"tick": "lit"}), State("lit")]),
        ...         State("fan", states=[State("still", on={"tick": "on"}), State("on")]),
        ...     ]),
        ... ])
        >>> instance = desk.start()
        >>> _ = instance.send("tick")
        >>> sorted(instance.configuration)
        ['fan', 'lamp', 'lit', 'on', 'working']
    """

    id: str
    states: Sequence[State | Parallel | Final | History] = ()
    on: Mapping[str, TargetSpec | Sequence[TargetSpec]] = field(default_factory=dict)
    always: TargetSpec | Sequence[TargetSpec] = ()
    after: Mapping[float, TargetSpec] = field(default_factory=dict)
    on_enter: ActionLike | Sequence[ActionLike] = ()
    on_exit: ActionLike | Sequence[ActionLike] = ()


@dataclass(frozen=True)
class Final:
    """A final state: entering it queues ``done.state.<parent id>`` with ``donedata``.

    Example:
        >>> from agentnb import Final, State, Statechart
        >>> order = Statechart("order", [State("open", on={"pay": "paid"}), Final("paid")])
        >>> instance = order.start()
        >>> _ = instance.send("pay")
        >>> instance.is_final
        True
    """

    id: str
    donedata: Any = None
    on_enter: ActionLike | Sequence[ActionLike] = ()
    on_exit: ActionLike | Sequence[ActionLike] = ()


@dataclass(frozen=True)
class History:
    """A history pseudo-state: re-enters the parent's last active child (``deep``: leaves).

    Example:
        Leaving ``on`` and coming back resumes the child it was in, not its initial one:

        >>> from agentnb import History, State, Statechart
        >>> player = Statechart("player", [
        ...     State("on", initial="paused", on={"power": "off"}, states=[
        ...         State("paused", on={"play": "playing"}),
        ...         State("playing"),
        ...         History("last"),
        ...     ]),
        ...     State("off", on={"power": "last"}),
        ... ])
        >>> radio = player.start()
        >>> _ = radio.send("play"); _ = radio.send("power"); _ = radio.send("power")
        >>> sorted(radio.configuration)
        ['on', 'playing']
    """

    id: str
    deep: bool = False
    default: str | Sequence[str] | None = None


def _awaits(item: object) -> bool:
    return bool(getattr(item, "awaits", False)) or inspect.iscoroutinefunction(
        getattr(item, "fn", None)
    )


def _listify(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | Mapping) or not isinstance(value, Iterable):
        return [value]
    return list(value)


def _content(actions: Any) -> tuple[Content, ...]:
    found: list[Content] = []
    for action in _listify(actions):
        if hasattr(action, "run") and not callable(action):
            found.append(action)
        elif callable(action):
            found.append(Call(action))
        else:
            raise DefinitionError(
                f"action {action!r} is neither a function nor executable content",
                culprit=repr(action),
                fix="Pass fn(context, payload) -> delta, or Raise/Send/Cancel/Assign/Log",
            )
    return tuple(found)


class Statechart(Drawable):
    """A statechart definition with SCXML semantics (built in code or by ``load_scxml``).

    Args:
        name: the chart's name.
        states: the top-level states.
        initial: the top-level state(s) to start in (the first one when omitted).
        datamodel: starting values of the datamodel (the instance's ``context``).
        description: free text.

    Raises:
        DefinitionError: an id repeats or is missing, a target or initial state does not exist.

    Example:
        >>> from agentnb import State, Statechart
        >>> light = Statechart("light", [
        ...     State("off", on={"flip": "on"}),
        ...     State("on", on={"flip": "off"}),
        ... ])
        >>> lamp = light.start("lamp-1")
        >>> lamp.send("flip").target
        'on'
        >>> sorted(lamp.configuration)
        ['on']
    """

    def __init__(
        self,
        name: str,
        states: Sequence[State | Parallel | Final | History] = (),
        *,
        initial: str | Sequence[str] | None = None,
        datamodel: Mapping[str, Any] | None = None,
        description: str = "",
        root: Node | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.binding = "early"
        self.nodes: dict[str, Node] = {}
        self.listeners: Listeners[[Any, Any]] = Listeners("statechart")
        self.delays: dict[str, float] = {}
        """The events ``after`` generates, and their delays in seconds (for diagrams)."""
        self._transition_count = 0
        if root is None:
            root = Node(ROOT, "scxml")
            for spec in states:
                root.children.append(self._build(spec, root))
            for key, value in (datamodel or {}).items():
                root.data.append((key, None, value))
            root.initial = self._initial_transition(root, initial)
        self.root = root
        self.finish()

    def __repr__(self) -> str:
        return f"<Statechart {self.name!r}: {len(self.nodes)} states>"

    # -- reading ------------------------------------------------------------------------

    @property
    def states(self) -> tuple[str, ...]:
        """Every state id (history pseudo-states included), in document order."""
        return tuple(self.nodes)

    @property
    def initial(self) -> str:
        """The top-level initial target(s), space-separated."""
        assert self.root.initial is not None
        return " ".join(self.root.initial.targets)

    @property
    def final(self) -> tuple[str, ...]:
        """The ids of the top-level final states (reaching one ends an instance)."""
        return tuple(c.id for c in self.root.children if c.kind == "final")

    @property
    def events(self) -> tuple[str, ...]:
        """Every event descriptor some transition names, in document order."""
        found: dict[str, None] = {}
        for node in self.nodes.values():
            for t in node.transitions:
                found.update(dict.fromkeys(t.events))
        return tuple(found)

    def state_value(self, state: str) -> str:
        """The value users see for a state: its id (a flat machine gives its ``Enum`` member)."""
        return state

    @functools.cached_property
    def awaits(self) -> bool:
        """Whether a guard or action is async: then an instance's events run the
        interpreter in a worker thread and await those on the caller's loop
        (``agentnb._aio.run_threaded``)."""
        for node in self.nodes.values():
            blocks = [*node.onentry, *node.onexit, *(t.content for t in node.transitions)]
            if any(_awaits(item) for block in blocks for item in block):
                return True
            conds = [t.cond.fn for t in node.transitions if t.cond is not None]
            if any(inspect.iscoroutinefunction(fn) for fn in conds if fn is not None):
                return True
        return False

    def transitions(self) -> list[ChartTransition]:
        """Every transition, in document order."""
        return sorted(
            (t for n in self.nodes.values() for t in n.transitions), key=lambda t: t.order
        )

    def subscribe(self, listener: Callable[[Any, Any], object]) -> Callable[[], None]:
        """Call ``listener(instance, record)`` after every step an instance commits.

        As for :meth:`~agentnb.fsm.StateMachine.subscribe`: not called for an ignored event
        or a repeated ``event_id``, not part of the definition, called outside the store's
        locks, a raising listener is reported with a :class:`RuntimeWarning`.
        Returns an unsubscribe function (calling it twice is harmless).
        """
        return self.listeners.add(listener)

    # -- running ------------------------------------------------------------------------

    def start(
        self,
        instance_id: str | None = None,
        context: Mapping[str, Any] | None = None,
        *,
        store: MachineStore | Checkpointer | None = None,
        clock: Clock | None = None,
        strict: bool = False,
    ) -> MachineInstance:
        """Start an instance: enter the initial configuration and run to a stable one.

        Args:
            context: datamodel values that replace the declared ones.
            store: where the instance lives (a new in-memory store when omitted).
            clock: ``clock() -> seconds`` for delayed events (``time.time`` by default;
                :class:`~agentnb.fsm.timers.ManualClock` in tests).
            strict: raise :class:`~agentnb.errors.TransitionNotAllowed` for an event that
                enables no transition (by default it is recorded as ignored, as SCXML does).
        """
        from agentnb.fsm.instance import start_instance

        return start_instance(self, instance_id, context, store=store, clock=clock, strict=strict)

    def resume(
        self,
        instance_id: str,
        *,
        store: MachineStore | Checkpointer,
        clock: Clock | None = None,
        strict: bool = False,
    ) -> MachineInstance:
        """Attach to an instance kept in ``store``; its pending timers come with it."""
        from agentnb.fsm.instance import resume_instance

        return resume_instance(self, instance_id, store=store, clock=clock, strict=strict)

    def to_scxml(self) -> str:
        """This chart as an SCXML document (Python functions cannot be exported)."""
        from agentnb.fsm.scxml_writer import write_scxml

        return write_scxml(self)

    # -- building -----------------------------------------------------------------------

    def _build(self, spec: State | Parallel | Final | History, parent: Node) -> Node:
        if isinstance(spec, History):
            node = Node(spec.id, "history", parent, deep=spec.deep)
            if spec.default is not None:
                node.initial = ChartTransition(node, (), tuple(_listify(spec.default)))
            return node
        kind = {State: "state", Parallel: "parallel", Final: "final"}.get(type(spec))
        if kind is None:
            raise DefinitionError(
                f"{spec!r} is not a State, Parallel, Final or History",
                culprit=repr(spec),
                fix="Build the tree from State, Parallel, Final and History",
            )
        node = Node(spec.id, kind, parent)
        if (enter := _content(spec.on_enter)) != ():
            node.onentry.append(enter)
        if (leave := _content(spec.on_exit)) != ():
            node.onexit.append(leave)
        if isinstance(spec, Final):
            node.donedata = spec.donedata
            return node
        node.children = [self._build(child, node) for child in spec.states]
        for event, targets in spec.on.items():
            for target in _listify(targets) or [None]:
                node.transitions.append(self._transition(node, tuple(event.split()), target))
        for target in _listify(spec.always):
            node.transitions.append(self._transition(node, (), target))
        for number, (seconds, target) in enumerate(spec.after.items()):
            event = f"after.{spec.id}.{number}"
            self.delays[event] = float(seconds)
            sendid = f"{event}.timer"
            node.onentry.append((Send(event, delay=seconds, id=sendid),))
            node.onexit.append((Cancel(sendid),))
            node.transitions.append(self._transition(node, (event,), target))
        if isinstance(spec, State) and node.child_states:
            node.initial = self._initial_transition(node, spec.initial)
        return node

    def _transition(self, node: Node, events: tuple[str, ...], spec: Any) -> ChartTransition:
        if (
            spec is None
            or isinstance(spec, str)
            or (isinstance(spec, Sequence) and not isinstance(spec, Mapping))
        ):
            return ChartTransition(node, events, tuple(_listify(spec)))
        if not isinstance(spec, Mapping):
            raise DefinitionError(
                f"transition {spec!r} of {node.id!r} is not a target, a list or a dict",
                culprit=node.id,
                fix="Write a state id, a list of ids, or {'target': ..., 'guard': ...}",
            )
        unknown = set(spec) - {"target", "guard", "action", "actions", "internal"}
        if unknown:
            raise DefinitionError(
                f"transition of {node.id!r} has unknown keys {sorted(unknown)}",
                culprit=node.id,
                fix="Use target, guard, action and internal",
            )
        guard = spec.get("guard")
        return ChartTransition(
            node,
            events,
            tuple(_listify(spec.get("target"))),
            cond=None if guard is None else Condition(guard),
            internal=bool(spec.get("internal", False)),
            content=_content(spec.get("action", spec.get("actions"))),
        )

    def _initial_transition(self, node: Node, initial: Any) -> ChartTransition:
        targets = tuple(_listify(initial))
        if not targets:
            states = node.child_states
            if not states:
                raise DefinitionError(
                    f"{'the chart' if node.kind == 'scxml' else repr(node.id)} has no states",
                    culprit=node.id,
                    fix="Add at least one State",
                )
            targets = (states[0].id,)
        return ChartTransition(node, (), targets)

    def finish(self) -> None:
        """Number the tree in document order, index it by id and check every reference."""
        self.nodes = finish(self.root, self.name)
