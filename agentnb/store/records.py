"""The records a checkpointer stores and returns: slotted dataclasses, JSON payloads.

Times are seconds since the epoch (UTC) as floats; ``at_iso`` gives a readable form.

Records are values: once built, nothing in agentnb assigns a field of one (a changed
record is a new one, made with ``dataclasses.replace``), and neither should code that
gets them — a :class:`~agentnb.MemoryCheckpointer` hands out the very records it holds.
Most are frozen dataclasses, which says so. The records a step builds every time —
its events (:class:`Event`), the run's :class:`RunRecord`, the step's
:class:`~agentnb.store.writes.StepCommit` and
:class:`~agentnb.store.writes.CheckpointWrite`, the
:class:`~agentnb.store.chains.Chain` — are ``@dataclass(slots=True)`` without
``frozen``: a frozen dataclass's ``__init__`` sets each field through
``object.__setattr__``, five to nine times the cost of building the record
(``bench/bench_records.py``: an event 1.2 µs instead of 0.24 µs; all of them 9 µs a
linear step in memory). The test suite refuses any assignment to their fields after
they are built (``tests/values.py``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

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
    "packed_event",
]


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


def _iso(at: float) -> str:
    import datetime as _dt

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


@dataclass(slots=True)  # not frozen: built on every step (see the module's docstring)
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


@dataclass(slots=True)  # not frozen: built on every step (see the module's docstring)
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
        """Deprecated: the lease owner, :attr:`lease_owner` (what it always returned)."""
        warnings.warn(
            "RunRecord.worker is deprecated: it is the run's lease owner (a process may "
            "hold a lease without being a Worker). Read RunRecord.lease_owner instead.",
            DeprecationWarning,
            stacklevel=2,
        )
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
