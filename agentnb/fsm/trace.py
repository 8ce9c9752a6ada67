"""What the interpreter reports: events as ``_event`` sees them, timer requests, microsteps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentnb.fsm.content import Content

__all__ = ["Microstep", "TimerRequest", "describe", "new_event"]


def new_event(
    name: str, data: Any = None, *, type: str = "external", **fields: Any
) -> dict[str, Any]:
    """An event as the datamodel sees ``_event``: a dict read with attribute syntax."""
    event = {
        "name": name,
        "type": type,
        "sendid": None,
        "origin": None,
        "origintype": None,
        "invokeid": None,
        "data": data,
    }
    event.update(fields)
    return event


@dataclass(frozen=True, slots=True)
class TimerRequest:
    """A delayed send the session asked for: the instance stores it as a timer."""

    sendid: str | None
    event: dict[str, Any]
    delay: float
    route: tuple[str, ...] = ()
    """The invoke ids from the top session down to the one the event is for."""
    sender: tuple[str, ...] = ()
    """The route of the session that sent it: if that session has ended, it is dropped."""


@dataclass(slots=True)
class Microstep:
    """What one microstep did, in order (for the microstep view and for teaching).

    Example:
        >>> from agentnb import State, Statechart
        >>> from agentnb.fsm import Raise
        >>> chain = Statechart("chain", [
        ...     State("a", on={"go": "b"}),
        ...     State("b", on_enter=[Raise("next")], on={"next": "c"}),
        ...     State("c"),
        ... ])
        >>> instance = chain.start()
        >>> _ = instance.send("go")
        >>> [(step.event, step.exited, step.entered) for step in instance.microsteps]
        [('go', ['a'], ['b']), ('next', ['b'], ['c'])]
    """

    event: str | None
    taken: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    exited: list[str] = field(default_factory=list)
    entered: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)
    transitions: list[int] = field(default_factory=list)
    """The taken transitions' document-order numbers (``ChartTransition.order``)."""
    configuration: list[str] = field(default_factory=list)
    """The active states after the microstep, in document order."""


def describe(item: Content) -> str:
    name = type(item).__name__.lower()
    if name == "call":
        return f"call {getattr(getattr(item, 'fn', None), '__name__', 'action')}"
    for attr in ("event", "location", "label", "sendid"):
        value = getattr(item, attr, None)
        if value is not None:
            text = getattr(value, "text", value)
            return f"{name} {text}"
    return name
