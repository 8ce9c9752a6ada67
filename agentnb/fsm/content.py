"""Executable content of a statechart: what runs on entry, on exit and on a transition.

These are the SCXML elements ``<raise>``, ``<send>``, ``<cancel>``, ``<assign>``, ``<log>``,
``<if>`` and ``<foreach>`` as frozen records, plus :class:`Call` for a Python function given
in code. Each one runs against a :class:`Runtime` (the interpreter's session) and raises
:class:`~agentnb.fsm.expressions.ExpressionError` when an expression fails; the interpreter
then queues ``error.execution`` and skips the rest of the block, as the standard says.

Example:
    >>> from agentnb.fsm.chart import State, Statechart
    >>> oven = Statechart("oven", [
    ...     State("idle", on={"start": "heating"}),
    ...     State("heating", on_enter=[Send("done", delay=30, id="cook")],
    ...           on={"door": "idle", "done": "idle"}, on_exit=[Cancel("cook")]),
    ... ])
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentnb._aio import settle
from agentnb.errors import DefinitionError, InvalidState
from agentnb.fsm.expressions import Expression, ExpressionError, Location

__all__ = [
    "Assign",
    "Call",
    "Cancel",
    "Content",
    "DoneData",
    "Foreach",
    "If",
    "Invoke",
    "Log",
    "Raise",
    "Runtime",
    "Send",
    "parse_delay",
]

SCXML_PROCESSOR = "http://www.w3.org/TR/scxml/#SCXMLEventProcessor"
_DELAY = re.compile(r"^\s*(\d*\.?\d+)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_delay(value: object) -> float:
    """Seconds from a number or a CSS2 time (``"1.5s"``, ``"500ms"``)."""
    if isinstance(value, bool):
        raise ExpressionError(f"delay {value!r} is not a duration")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _DELAY.match(value)
        if match:
            return float(match.group(1)) * _UNITS[match.group(2)]
    raise ExpressionError(f"delay {value!r} is not a duration like '2s' or '500ms'")


class Runtime(Protocol):
    """What executable content may do to a running session."""

    data: dict[str, Any]
    written: set[str]
    """The datamodel keys content set during this event (a record's ``delta`` has them)."""

    def evaluate(self, expr: Expression) -> Any: ...
    def assign(self, location: Location, value: Any, *, declare: bool = False) -> None: ...
    def raise_event(self, name: str, data: Any = None) -> None: ...
    def send(
        self, name: str, data: Any, *, target: str | None, delay: float, sendid: str | None
    ) -> None: ...
    def cancel(self, sendid: str) -> None: ...
    def log(self, label: str, value: Any) -> None: ...
    def new_sendid(self) -> str: ...
    def payload(self) -> Any: ...


class Content(Protocol):
    """One element of executable content."""

    def run(self, rt: Runtime) -> None: ...


def _coerce(record: Any, **kinds: type) -> None:
    """Let code pass plain strings where a record holds an Expression or a Location."""
    for name, kind in kinds.items():
        value = getattr(record, name)
        if isinstance(value, str):
            try:
                object.__setattr__(record, name, kind(value))
            except ExpressionError as exc:
                raise DefinitionError(
                    f"{type(record).__name__}({name}={value!r}): {exc}",
                    culprit=value,
                    fix="Write a Python expression over the datamodel",
                ) from None


def _value(rt: Runtime, expr: Expression | None, literal: Any) -> Any:
    return rt.evaluate(expr) if expr is not None else literal


@dataclass(frozen=True, slots=True)
class Raise:
    """Queue an internal event (processed before any external one).

    Example:
        >>> from agentnb import State, Statechart
        >>> from agentnb.fsm import Raise
        >>> chain = Statechart("chain", [
        ...     State("a", on={"go": "b"}),
        ...     State("b", on_enter=[Raise("next")], on={"next": "c"}),  # in the same macrostep
        ...     State("c"),
        ... ])
        >>> instance = chain.start()
        >>> _ = instance.send("go")
        >>> sorted(instance.configuration)
        ['c']
    """

    event: str
    data: Any = None
    line: int | None = field(default=None, compare=False)

    def run(self, rt: Runtime) -> None:
        rt.raise_event(self.event, copy.deepcopy(self.data))


@dataclass(frozen=True, slots=True)
class Send:
    """Send an event to this session: now (external queue) or after ``delay`` seconds.

    ``target="#_internal"`` queues it as an internal event. ``id`` names a delayed send so
    :class:`Cancel` can withdraw it.

    Example:
        >>> from agentnb import ManualClock, State, Statechart
        >>> from agentnb.fsm import Send
        >>> clock = ManualClock()
        >>> alarm = Statechart("alarm", [
        ...     State("set", on_enter=[Send("ring", delay=10, id="alarm")], on={"ring": "ringing"}),
        ...     State("ringing"),
        ... ])
        >>> instance = alarm.start(clock=clock)
        >>> [(timer.event, timer.fire_at) for timer in instance.timers()]
        [('ring', 10.0)]
        >>> clock.advance(10)
        10.0
        >>> [record.target for record in instance.run_due()]
        ['ringing']
    """

    event: str | None = None
    delay: float | str = 0.0
    id: str | None = None
    data: Any = None
    target: str | None = None
    eventexpr: Expression | None = None
    targetexpr: Expression | None = None
    typeexpr: Expression | None = None
    type: str | None = None
    delayexpr: Expression | None = None
    idlocation: Location | None = None
    namelist: tuple[tuple[str, Location], ...] = ()
    params: tuple[tuple[str, Expression], ...] = ()
    content: Expression | None = None
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _coerce(
            self,
            eventexpr=Expression,
            targetexpr=Expression,
            typeexpr=Expression,
            delayexpr=Expression,
            content=Expression,
            idlocation=Location,
        )

    def run(self, rt: Runtime) -> None:
        sendid = self.id
        if self.idlocation is not None:
            sendid = rt.new_sendid()
            rt.assign(self.idlocation, sendid)
        try:
            self._send(rt, sendid)
        except ExpressionError as exc:
            raise ExpressionError(str(exc), sendid=sendid) from None

    def _send(self, rt: Runtime, sendid: str | None) -> None:
        name = _value(rt, self.eventexpr, self.event)
        if not isinstance(name, str) or not name:
            raise ExpressionError(f"the event name {name!r} is not a string")
        target = _value(rt, self.targetexpr, self.target)
        kind = _value(rt, self.typeexpr, self.type)
        if kind not in (None, SCXML_PROCESSOR, "scxml"):
            raise ExpressionError(f"send type {kind!r} is not supported")
        delay = parse_delay(_value(rt, self.delayexpr, self.delay))
        data: Any = copy.deepcopy(self.data)
        if self.namelist or self.params:
            data = dict(data) if isinstance(data, Mapping) else {}
            for key, location in self.namelist:
                data[key] = rt.evaluate(Expression(location.text))
            for key, expr in self.params:
                data[key] = rt.evaluate(expr)
        elif self.content is not None:
            data = rt.evaluate(self.content)
        rt.send(name, data, target=target, delay=delay, sendid=sendid)


@dataclass(frozen=True, slots=True)
class Cancel:
    """Withdraw the delayed send with this id (nothing happens if it already fired).

    Example:
        >>> from agentnb import ManualClock, State, Statechart
        >>> from agentnb.fsm import Cancel, Send
        >>> clock = ManualClock()
        >>> alarm = Statechart("alarm", [
        ...     State("set", on_enter=[Send("ring", delay=10, id="alarm")],
        ...           on={"ring": "ringing", "off": {"action": [Cancel("alarm")]}}),
        ...     State("ringing"),
        ... ])
        >>> instance = alarm.start(clock=clock)
        >>> _ = instance.send("off")
        >>> instance.timers()
        []
    """

    sendid: str | None = None
    sendidexpr: Expression | None = None
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _coerce(self, sendidexpr=Expression)

    def run(self, rt: Runtime) -> None:
        rt.cancel(str(_value(rt, self.sendidexpr, self.sendid)))


@dataclass(frozen=True, slots=True)
class Log:
    """Record ``label`` and the expression's value in the session's log (informative).

    Example:
        >>> from agentnb import State, Statechart
        >>> from agentnb.fsm import Log
        >>> chart = Statechart("noisy", [State("a", on={"go": {"action": [Log("n is", "n")]}})],
        ...                    datamodel={"n": 7})
        >>> instance = chart.start()
        >>> _ = instance.send("go")
        >>> instance.logs
        [('n is', 7)]
    """

    label: str = ""
    expr: Expression | None = None
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _coerce(self, expr=Expression)

    def run(self, rt: Runtime) -> None:
        rt.log(self.label, None if self.expr is None else rt.evaluate(self.expr))


@dataclass(frozen=True, slots=True)
class Assign:
    """Set a datamodel location (it must exist) to an expression's value or a literal.

    Example:
        >>> from agentnb import State, Statechart
        >>> from agentnb.fsm import Assign
        >>> tick = {"action": [Assign("n", "n + 1")]}  # an expression, evaluated safely
        >>> counter = Statechart("counter", [State("idle", on={"tick": tick})], datamodel={"n": 0})
        >>> instance = counter.start()
        >>> _ = instance.send("tick"); _ = instance.send("tick")
        >>> instance.context["n"]
        2
    """

    location: Location
    expr: Expression | None = None
    value: Any = None
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _coerce(self, location=Location, expr=Expression)

    def run(self, rt: Runtime) -> None:
        rt.assign(self.location, _value(rt, self.expr, copy.deepcopy(self.value)))


@dataclass(frozen=True, slots=True)
class If:
    """``<if>``/``<elseif>``/``<else>``: the first branch whose condition holds runs.

    Example:
        >>> from agentnb import State, Statechart
        >>> from agentnb.fsm import Assign, If
        >>> from agentnb.fsm.expressions import Expression
        >>> size = If((
        ...     (Expression("amount > 500"), (Assign("size", "'big'"),)),
        ...     (None, (Assign("size", "'small'"),)),  # else
        ... ))
        >>> refund = Statechart("refund", [State("new", on={"size": {"action": [size]}})],
        ...                     datamodel={"amount": 800, "size": None})
        >>> instance = refund.start()
        >>> _ = instance.send("size")
        >>> instance.context["size"]
        'big'
    """

    branches: tuple[tuple[Expression | None, tuple[Content, ...]], ...]
    line: int | None = field(default=None, compare=False)

    def run(self, rt: Runtime) -> None:
        for cond, body in self.branches:
            if cond is None or rt.evaluate(cond):
                for item in body:
                    item.run(rt)
                return


@dataclass(frozen=True, slots=True)
class Foreach:
    """Run ``body`` once per item of a copy of ``array``, binding ``item`` (and ``index``).

    Example:
        >>> from agentnb import State, Statechart
        >>> from agentnb.fsm import Assign, Foreach
        >>> add_up = Foreach("items", "item", body=(Assign("total", "total + item"),))
        >>> cart = Statechart("cart", [State("open", on={"sum": {"action": [add_up]}})],
        ...                   datamodel={"items": [3, 4, 5], "total": 0})
        >>> instance = cart.start()
        >>> _ = instance.send("sum")
        >>> instance.context["total"]
        12
    """

    array: Expression
    item: Location
    index: Location | None = None
    body: tuple[Content, ...] = ()
    line: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        _coerce(self, array=Expression, item=Location, index=Location)

    def run(self, rt: Runtime) -> None:
        array = rt.evaluate(self.array)
        if isinstance(array, Mapping):
            items: Sequence[Any] = list(array.values())
        elif isinstance(array, list | tuple | str):
            items = list(array)
        else:
            raise ExpressionError(f"foreach array is a {type(array).__name__}, not a list")
        for position, value in enumerate(copy.deepcopy(items)):
            rt.assign(self.item, value, declare=True)
            if self.index is not None:
                rt.assign(self.index, position, declare=True)
            for item in self.body:
                item.run(rt)


@dataclass(frozen=True, slots=True)
class DoneData:
    """``<donedata>``: the data of a final state's ``done.state.<id>`` event."""

    params: tuple[tuple[str, Expression | None, Location | None], ...] = ()
    content: Expression | None = None
    literal: Any = None
    line: int | None = field(default=None, compare=False)

    def value(self, rt: Runtime) -> Any:
        if self.params:
            data: dict[str, Any] = {}
            for key, expr, location in self.params:
                source = expr if expr is not None else Expression(location.text)  # type: ignore[union-attr]
                data[key] = rt.evaluate(source)
            return data
        if self.content is not None:
            return rt.evaluate(self.content)
        return copy.deepcopy(self.literal)


@dataclass(frozen=True, slots=True)
class Invoke:
    """``<invoke>`` of an SCXML child session, given inline: started when its state is
    entered (at the end of the macrostep), cancelled when it is left.

    ``chart`` is the child :class:`~agentnb.fsm.chart.Statechart`; ``params`` and ``namelist``
    set the child's declared data; ``finalize`` runs on each event the child sends back;
    ``autoforward`` copies every external event of the parent to the child.
    """

    chart: Any
    id: str | None = None
    idlocation: Location | None = None
    typeexpr: Expression | None = None
    autoforward: bool = False
    params: tuple[tuple[str, Expression], ...] = ()
    namelist: tuple[tuple[str, Location], ...] = ()
    finalize: tuple[Content, ...] = ()
    line: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Call:
    """A Python function given in code: ``fn(context, payload) -> delta | None``.

    It gets a copy of the datamodel and the event's data; the returned dict updates the
    datamodel. It may be async: ``asend`` awaits it on the caller's loop, ``send`` as a
    sync call does. An exception propagates: the event is not saved.
    """

    fn: Callable[[dict[str, Any], Any], Any]
    """Returns a delta (a dict), ``None``, or an awaitable of one."""

    def run(self, rt: Runtime) -> None:
        # An async function is awaited on the caller's loop (agentnb._aio.settle).
        result: Any = settle(self.fn(copy.deepcopy(rt.data), rt.payload()))
        if result is None:
            return
        if not isinstance(result, Mapping):
            raise DefinitionError(
                f"action {_name(self.fn)!r} returned a {type(result).__name__}, not a dict or None",
                culprit=_name(self.fn),
                fix="Return a dict of the context keys to set (a delta), or None",
            )
        for key in result:
            if not isinstance(key, str):
                raise InvalidState(
                    f"context[{key!r}]", f"the key set by {_name(self.fn)!r} is not a str"
                )
        rt.data.update(copy.deepcopy(dict(result)))
        rt.written.update(result)


def _name(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__name__", None) or repr(fn))
