"""The records a checkpointer stores and returns: frozen dataclasses, JSON payloads.

Times are seconds since the epoch (UTC) as floats; ``at_iso`` gives a readable form.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ParamSpec, TypeVar, dataclass_transform

from agentnb.identity import Identity

__all__ = [
    "DECISIONS",
    "Checkpoint",
    "Decision",
    "Effect",
    "Event",
    "EventType",
    "PendingTask",
    "PendingWrite",
    "RunRecord",
    "Status",
    "maker",
    "packed_event",
    "record",
]

R = TypeVar("R")
P = ParamSpec("P")


@dataclass_transform(frozen_default=True)
def record(cls: type[R]) -> type[R]:
    """``@dataclass(frozen=True, slots=True)`` whose instances are built at the cost of
    plain assignments.

    A frozen dataclass's own ``__init__`` assigns every field through
    ``object.__setattr__`` (its ``__setattr__`` refuses), about four times the cost of a
    plain assignment; the records a step builds (events, the commit, its checkpoint, the
    chain) pay it on every step. A record is made by a ``__new__`` instead: it fills the
    slots of an *open* twin — a subclass adding no slots, whose ``__setattr__`` and
    ``__delattr__`` are ``object``'s, so each field is a plain store — then gives the
    instance the record's class (the layouts are the same). No ``__init__`` runs after
    it. The instance is as frozen as before (assigning a field raises
    ``FrozenInstanceError``), and ``dataclasses.replace``, ``fields``, ``==``, ``repr``,
    ``copy`` and ``pickle`` work as they did. A subclass of a record is built the stock
    way.
    """
    made: Any = dataclass(frozen=True, slots=True)(cls)
    names, params = [], []
    scope: dict[str, Any] = {"_made": made, "_new": object.__new__}
    for f in dataclasses.fields(made):
        if f.default_factory is not dataclasses.MISSING or not f.init or f.kw_only:
            return made  # type: ignore[no-any-return]  # (none of those here: keep the stock one)
        names.append(f.name)
        scope[f"_set_{f.name}"] = made.__dict__[f.name].__set__
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    scope["_open"] = type(
        f"_Open{made.__name__}",
        (made,),
        {
            "__slots__": (),
            # both: they are one slot in C, so stores are C's own only when neither is Python
            "__setattr__": object.__setattr__,
            "__delattr__": object.__delattr__,
            "__module__": made.__module__,
        },
    )
    signature = ", ".join(["cls", *params])
    stores = "".join(f"\n    self.{n} = {n}" for n in names)
    made_stores = "".join(f"\n  self.{n} = {n}" for n in names)
    sets = "".join(f"\n  _set_{n}(self, {n})" for n in names)
    values = "".join(f"self.{n}, " for n in names)
    exec(
        f"def __new__({signature}):"
        "\n  if cls is _made:"
        f"\n    self = _new(_open){stores}"
        "\n    self.__class__ = cls"
        "\n    return self"
        f"\n  self = _new(cls){sets}"
        "\n  return self"
        f"\ndef __getnewargs__(self):\n  return ({values})"
        f"\ndef _make({', '.join(params)}):\n  self = _new(_open){made_stores}"
        "\n  self.__class__ = _made"
        "\n  return self",
        scope,
    )
    _MAKERS[made] = scope["_make"]
    scope["_make"].__qualname__ = f"maker({made.__qualname__})"
    for name in ("__new__", "__getnewargs__"):
        method: Callable[..., Any] = scope[name]
        method.__qualname__ = f"{made.__qualname__}.{name}"
        method.__module__ = made.__module__
        setattr(made, name, method)
    made.__new__.__doc__ = made.__init__.__doc__
    del made.__init__  # object's: it checks nothing when __new__ is a class's own
    return made  # type: ignore[no-any-return]


class Status(StrEnum):
    """Where a run stands. ``str(status)`` is the value stored in the database."""

    QUEUED = "queued"
    """Submitted (``workflow.submit``) and waiting for a :class:`~agentnb.Worker` to claim it;
    nothing has run in the caller. A worker stopped mid-run puts its runs back here."""
    RUNNING = "running"
    """In progress: a worker may step it (``worker`` says whether one holds it now)."""
    PENDING = "pending"
    """Paused at an interrupt, waiting for a human to approve or reject."""
    APPROVED = "approved"
    """Approved and waiting for a worker with the workflow code to continue it."""
    COMPLETED = "completed"
    REJECTED = "rejected"
    FAILED = "failed"
    CANCELLED = "cancelled"
    """Stopped by cancellation; the last checkpoint is intact, so it can be continued."""

    @property
    def finished(self) -> bool:
        """True for statuses that nothing continues: completed, rejected, failed."""
        return self in (Status.COMPLETED, Status.REJECTED, Status.FAILED)


class EventType(StrEnum):
    """The built-in event types. Nodes may emit their own types through ``ctx.emit``."""

    RUN_STARTED = "run_started"
    NODE_START = "node_start"
    STATE_UPDATE = "state_update"
    INTERRUPTED = "interrupted"
    APPROVED = "approved"
    REJECTED = "rejected"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RETRY = "retry"
    """A node attempt failed and will be retried after ``payload["wait"]`` seconds."""
    TIMEOUT = "timeout"
    """A node attempt ran past its timeout and was cancelled."""
    BREAKER_OPEN = "breaker_open"
    """A circuit breaker refused to call the node."""
    EFFECT = "effect"
    """A side effect ran through ``ctx.once`` and its result was recorded."""
    EFFECT_REPLAYED = "effect_replayed"
    """``ctx.once`` found the side effect already done and returned the recorded result."""


DECISIONS = ("approved", "rejected")


_MAKERS: dict[object, Callable[..., Any]] = {}
"""Each record class's plain-function constructor (see :func:`maker`)."""


def maker(cls: Callable[P, R]) -> Callable[P, R]:
    """The constructor of the :func:`record` class ``cls`` as a plain function: the same
    record from the same arguments, without the call through ``type`` (``type.__call__``
    reaching a Python ``__new__``: an argument tuple, a keyword dict, ~half the cost of
    building an event). For the records built on every step; any other class (a
    record's subclass) is returned as it is."""
    fast = _MAKERS.get(cls)
    return cls if fast is None else fast


def _iso(at: float) -> str:
    return _dt.datetime.fromtimestamp(at, _dt.UTC).isoformat(timespec="milliseconds")


NS = 1_000_000_000
"""Nanoseconds in a second: an event's ``at`` made from ``time.time_ns()`` is ``ns / NS``."""


def packed_event(
    seq: int, step: int, type_json: str, node_json: str, payload_json: str, at_ns: int
) -> str:
    """One event as the SQL stores pack it (``[seq, step, type, node, payload, at]``, a row
    of the JSON array in an entry's ``events`` column), from its parts already encoded.

    ``at_ns`` is the event's time in integer nanoseconds, written as exact decimals: the
    text decodes to ``at_ns / NS``, the very float the event holds, without formatting
    a float (``repr`` of one costs more than encoding the rest of the row).
    """
    if at_ns >= NS:  # (any time since 1970-01-01T00:00:01) its digits, the point put in
        digits = str(at_ns)
        return f"[{seq},{step},{type_json},{node_json},{payload_json},{digits[:-9]}.{digits[-9:]}]"
    # (the nine decimals are NS + fraction's digits but the first: zero-padded without a
    # format spec)
    return (
        f"[{seq},{step},{type_json},{node_json},{payload_json},"
        f"{at_ns // NS}.{str(NS + at_ns % NS)[1:]}]"
    )


@record
class Event:
    """One thing that happened in a run, in order (``seq`` counts from 1 per run)."""

    run_id: str
    seq: int
    step: int
    type: str
    node: str | None
    payload: dict[str, Any]
    at: float

    @property
    def at_iso(self) -> str:
        return _iso(self.at)

    def __str__(self) -> str:
        node = f" {self.node}" if self.node else ""
        return f"#{self.seq} step {self.step} {self.type}{node}"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The state of a run after ``step`` nodes, and the node that runs next."""

    run_id: str
    step: int
    node: str
    state: dict[str, Any]
    at: float
    tasks: dict[str, Any] | None = None
    """What the next superstep runs when it is more than ``node`` (fan-out, Sends, joins
    waiting): the frontier as JSON; ``None`` for a linear run."""


@dataclass(frozen=True, slots=True)
class PendingWrite:
    """The saved result of one task of a superstep that has not been committed yet.

    Saved when the task finishes, so a worker that resumes the superstep after a crash
    runs only the tasks without one. ``step`` is the superstep's starting checkpoint.
    """

    run_id: str
    step: int
    task_id: str
    node: str
    delta: dict[str, Any]
    events: list[Event]
    at: float


@dataclass(frozen=True, slots=True)
class PendingTask:
    """One task of a superstep held by an interrupt, and its approval.

    A superstep can hold several at once; each is decided exactly once. ``status`` is
    ``pending``, ``approved`` or ``rejected``. The run continues once all are approved;
    rejecting one rejects the run.

    ``update`` is the edit its approval carried (``run.approve(task=..., update=...)``):
    the task runs on the superstep's state with it merged in, and it is merged into the
    superstep's result. ``replaces`` lists its keys that have no reducer.
    """

    run_id: str
    step: int
    task_id: str
    node: str
    digest: str
    status: str
    decided_by: str | None = None
    decided_at: float | None = None
    update: dict[str, Any] | None = None
    replaces: tuple[str, ...] = ()


@record
class RunRecord:
    """A run's row: status, position, and who (if anyone) is driving it."""

    run_id: str
    graph: str
    shape: str
    status: Status
    node: str
    step: int
    seq: int
    max_steps: int
    created_at: float
    updated_at: float
    error: dict[str, Any] | None = None
    pending_digest: str | None = None
    decided_by: str | None = None
    decided_at: float | None = None
    lease_owner: str | None = None
    lease_expires: float | None = None
    fence: int = 0

    @property
    def worker(self) -> str | None:
        """The worker holding the run's lease, if any (it may have expired)."""
        return self.lease_owner


@dataclass(frozen=True, slots=True)
class Decision:
    """One line of the approval audit: accepted decisions and refused attempts alike.

    ``approver`` is the name given (``by=`` / ``--as``); ``identity`` is who the deciding
    process vouched for, the one an approver policy was checked against.
    """

    id: int
    run_id: str
    node: str | None
    step: int | None
    decision: str
    approver: str
    comment: str | None
    digest_shown: str | None
    pending_digest: str | None
    accepted: bool
    reason: str | None
    at: float = field(compare=False)
    edit: dict[str, Any] | None = None
    """What an accepted approval changed: ``update`` (the edited keys) with the
    ``approved_digest`` of the state approved, or the ``answer`` to a node's question."""
    identity: Identity | None = None
    """Who the deciding process vouched for (``approver`` is the name they gave)."""

    @property
    def at_iso(self) -> str:
        return _iso(self.at)


@dataclass(frozen=True, slots=True)
class Effect:
    """A side effect done through ``ctx.once``: its key and recorded (JSON) result."""

    key: str
    run_id: str
    step: int
    node: str
    name: str
    result: Any
    at: float
