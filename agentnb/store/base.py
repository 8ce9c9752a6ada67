"""The checkpointer contract every backend implements, and the shared rules they follow.

A checkpointer keeps, per run: one row (status, position, lease), every step's checkpoint
(so a run can be inspected at any past step), the event log, and an append-only audit of
decisions that includes refused attempts (never changed; deleted only by a retention that
asks for it, once its run is gone: :mod:`agentnb.store.retention`). All writes for one
step — checkpoint, events and the run row — happen in one transaction, so any process
reading the store sees a step completely or not at all.

Two invariants are decided by the database, never by a process's memory:

* **one worker drives a run at a time** — :meth:`Checkpointer.acquire` takes a lease with an
  expiry and bumps the run's *fence*; every later write names that fence and is refused
  (:class:`~agentnb.errors.LeaseLost`) once another worker has taken over;
* **a pending run is decided exactly once** — :meth:`Checkpointer.decide` is a conditional
  update of the pending row; the loser of a race gets
  :class:`~agentnb.errors.ApprovalNotPending` and its attempt is audited;
* **only an allowed identity decides** — the approver policy stored with the run when it
  started (:mod:`agentnb.store.policy`) is checked in the same transaction, against the
  identity the process vouches for (:mod:`agentnb.identity`), never the name typed.

Decisions, refused attempts and the effect ledger are committed durably (SQLite:
``synchronous=FULL`` at least, whatever the level for steps): they are what a person or a
payment relies on.

Each method the runtime calls while driving runs has an awaitable twin named with an ``a``
(:meth:`Checkpointer.acommit` for :meth:`Checkpointer.commit`, ...): the driver and the
:class:`~agentnb.Worker` await those, so a slow store (a busy SQLite file, a database over a
network) never blocks the event loop on which one worker drives hundreds of runs. By
default a twin runs its sync method in a worker thread (:meth:`Checkpointer.offload`); a
store that never waits (the memory store: :attr:`Checkpointer.blocking` is false) calls it
directly, and a backend with a native async driver may override the twins. The sync
methods stay, for scripts, notebooks and the CLI.
"""

from __future__ import annotations

import hashlib
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, Self, TypeVar

from agentnb._aio import driving_alone
from agentnb._json import dumps
from agentnb.errors import ApprovalNotPending, ConflictingEdit, InvalidDecision, StaleApproval
from agentnb.identity import Identity, IdentityProvider, current_identity, vouched
from agentnb.store.policy import ApproverPolicy, PolicyCheck, RunPolicy

if TYPE_CHECKING:
    from agentnb.fsm.storage import MachineStore
from agentnb.store.records import (
    DECISIONS,
    Checkpoint,
    Decision,
    Effect,
    Event,
    PendingTask,
    PendingWrite,
    RunRecord,
    Status,
)

if TYPE_CHECKING:
    import datetime

    from agentnb.store.claims import TimerClaim
    from agentnb.store.history import CheckpointInfo
    from agentnb.store.retention import Pruned

__all__ = [
    "CheckpointWrite",
    "Checkpointer",
    "DecisionEdit",
    "StepCommit",
    "check_decision",
    "check_task_edit",
    "edit_conflict",
    "new_owner",
    "owner_is_dead",
    "pending_digest",
]

DEFAULT_LEASE_SECONDS = 30.0

P = ParamSpec("P")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckpointWrite:
    """A checkpoint to save: the state (already JSON) after ``step`` nodes, and the next node;
    or, with ``delta_json``, only what changed since the step before."""

    step: int
    node: str
    state_json: str
    tasks_json: str | None = None
    """The next superstep's frontier (JSON) when it is more than ``node``."""
    delta_json: str | None = None
    """When set, the row stores this delta (:func:`agentnb.store.deltas.diff`, JSON) from
    the run's checkpoint at ``step - 1`` instead of ``state_json`` (which may then be
    empty): the writer chose it with :class:`agentnb.store.chains.Chain`. A run's first
    checkpoint ignores it (always a snapshot). Backends store rows through
    :func:`agentnb.store.chains.row` and load them with :func:`~agentnb.store.chains.rebuild`."""


@dataclass(frozen=True, slots=True)
class StepCommit:
    """Everything one step changes, written in one transaction by :meth:`Checkpointer.commit`."""

    status: Status
    node: str
    step: int
    events: Sequence[Event]
    checkpoint: CheckpointWrite | None = None
    error: dict[str, Any] | None = None
    pending_digest: str | None = None
    release: bool = False
    """Give up the lease with this write (the worker stops driving the run)."""
    settles: int | None = None
    """The superstep whose pending writes this commit merges: they are deleted with it."""
    holds: Sequence[tuple[str, str, str]] = ()
    """``(task id, node, digest)`` of each task of superstep ``step`` an interrupt holds:
    saved as pending approvals (a task already held keeps its row and its decision). The
    events of that superstep's pending writes are committed with it, so the writes keep
    only their deltas."""


@dataclass(frozen=True, slots=True)
class DecisionEdit:
    """What an approval carries besides its yes, saved in the decision's transaction.

    Either an edited state (approve with edits: ``state_json`` becomes the pending step's
    checkpoint; ``update`` and ``approved_digest`` go to the audit), or the answer to a
    node's question (``answer_key`` is the ledger key ``ctx.interrupt`` reads back).
    """

    state_json: str | None = None
    tasks_json: str | None = None
    update: dict[str, Any] | None = None
    approved_digest: str | None = None
    answer_key: str | None = None
    answer_json: str | None = None
    replaces: tuple[str, ...] = ()
    """An edit of one held task: the keys of ``update`` that have no reducer (another
    task's edit replacing one of them is refused, :class:`~agentnb.errors.ConflictingEdit`)."""

    def audit(self) -> dict[str, Any]:
        """What the audit keeps of the edit."""
        from agentnb._json import loads

        kept: dict[str, Any] = {}
        if self.update is not None:
            kept["update"] = self.update
            kept["approved_digest"] = self.approved_digest
        if self.answer_json is not None:
            kept["answer"] = loads(self.answer_json)
        return kept


def check_task_edit(edit: DecisionEdit | None) -> None:
    """An approval of one held task edits that task's input (``update``), never the
    superstep's checkpoint (refused before any write)."""
    if edit is not None and edit.state_json is not None:
        raise InvalidDecision(
            "approving one of several held tasks edits that task's input, not the state "
            "of the superstep; nothing was changed. Pass the edit as run.approve(task=..., "
            "update={...})"
        )


def edit_conflict(
    run_id: str, edit: DecisionEdit | None, task: str | None, held: Sequence[PendingTask]
) -> tuple[ConflictingEdit, str] | None:
    """Why an edit of held ``task`` is refused: it replaces a key (one without a reducer)
    that another held task's accepted edit replaces too. The error and the audit's reason."""
    if edit is None or not edit.replaces or task is None:
        return None
    for other in held:
        if other.task_id != task and other.status == "approved":
            clash = next((k for k in edit.replaces if k in other.replaces), None)
            if clash is not None:
                error = ConflictingEdit(run_id, task, clash, f"task {other.task_id!r}'s edit")
                return error, f"conflicting edit: {clash!r}"
    return None


def check_decision(decision: str, approver: str) -> None:
    """Refuse a malformed decision before anything touches storage."""
    if decision not in DECISIONS:
        raise InvalidDecision(
            f"decision must be 'approved' or 'rejected', not {decision!r}; "
            "nothing was changed (an unknown decision is never taken as an approval)"
        )
    if not isinstance(approver, str) or not approver.strip():
        raise InvalidDecision(
            "a decision needs the approver's name (approver=... / --as NAME) for the audit"
        )


def pending_digest(run_id: str, node: str, step: int, state_json: str) -> str:
    """The digest of what an approver is shown: run, paused node, step and state.

    An approval that carries this digest is refused if the pending state has changed.
    """
    text = dumps([run_id, node, step]) + state_json
    return hashlib.sha256(text.encode()).hexdigest()


_HOST = os.uname().nodename


def new_owner() -> str:
    """A lease owner id: ``host:pid:random`` (host and pid let a dead owner be recognised)."""
    return f"{_HOST}:{os.getpid()}:{os.urandom(4).hex()}"


def owner_is_dead(owner: str | None) -> bool:
    """True when ``owner`` names a process on this host that no longer exists.

    Lets a restarted kernel take over its own run at once instead of waiting for the lease
    to expire. Owners on other hosts are only ever released by expiry.
    """
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


class Checkpointer(ABC):
    """Where runs, checkpoints, events and decisions live. Use it as a context manager."""

    identity: IdentityProvider = staticmethod(current_identity)
    """Who this process is: called for runs started and decisions made through this store
    when the workflow has no provider of its own (``identity=`` on the constructor)."""

    def _vouch(self, identity: Identity | None) -> Identity:
        """The identity a decision or a start is recorded under."""
        return identity if identity is not None else vouched(self.identity)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release the connection. Further calls raise :class:`~agentnb.errors.StoreError`."""

    # -- runs ----------------------------------------------------------------------------

    @abstractmethod
    def create_run(
        self,
        run: RunRecord,
        checkpoint: CheckpointWrite,
        events: Sequence[Event],
        *,
        started_by: Identity | None = None,
        policies: Mapping[str, ApproverPolicy] | None = None,
    ) -> None:
        """Insert a new run with its first checkpoint and events; refuse an existing id.

        ``started_by`` and ``policies`` (keyed ``"before:NODE"``/``"after:NODE"``) are
        stored with it: its decisions are checked against them, by any process.
        """

    @abstractmethod
    def run_policy(self, run_id: str) -> RunPolicy:
        """Who started the run and its interrupts' approver policies (empty if none)."""

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """The run's row, or :class:`~agentnb.errors.RunNotFound`."""

    @abstractmethod
    def list_runs(self, status: Status | str | None = None) -> list[RunRecord]:
        """Runs, newest first, optionally only those with ``status``."""

    # -- driving -------------------------------------------------------------------------

    @abstractmethod
    def acquire(
        self, run_id: str, owner: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> RunRecord:
        """Take the run's lease for ``owner`` and return the row with its new fence.

        Succeeds when the lease is free, expired, already ``owner``'s, or held by a dead
        process on this host; otherwise raises :class:`~agentnb.errors.RunBusy`.
        """

    @abstractmethod
    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        """Apply one step atomically if ``fence`` still owns the run; else ``LeaseLost``.

        ``change.events`` must not be empty. The lease is renewed to ``lease_seconds``
        whenever less than half of it is left, and given up if ``change.release``.
        """

    @abstractmethod
    def release(self, run_id: str, fence: int) -> None:
        """Give up the lease if ``fence`` still holds it (a no-op otherwise)."""

    # -- claiming work (rules: agentnb.store.claims) ---------------------------------------

    @abstractmethod
    def claim(
        self,
        owner: str,
        graphs: Mapping[str, str],
        *,
        limit: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        run_ids: Sequence[str] | None = None,
    ) -> list[RunRecord]:
        """Take the leases of up to ``limit`` runnable runs for ``owner``, atomically.

        ``graphs`` maps the workflow names the caller can drive to their shapes; only runs
        of those are taken (and only ``run_ids``, when given). Runnable: ``queued`` or
        ``approved`` and free, or any of those and ``running`` with an expired lease (see
        :mod:`agentnb.store.claims`). Each claimed run's fence is bumped, as by
        :meth:`acquire`; the rows come back oldest first, with their new lease. Two
        callers never get the same run while its lease lasts.
        """

    @abstractmethod
    def renew(
        self, owner: str, run_ids: Sequence[str], *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> list[str]:
        """Extend ``owner``'s leases on ``run_ids`` to ``lease_seconds`` from now, in one
        write; returns the ids it still held. A worker's heartbeat: a node may run longer
        than the lease, and only a worker that stopped beating loses its runs."""

    @abstractmethod
    def requeue(self, run_id: str, fence: int) -> bool:
        """Put a ``running`` run nobody holds back to ``queued`` if ``fence`` is still its
        latest; True if it was. A worker that stops between steps calls it after releasing
        the lease, so another worker claims the run at once."""

    @abstractmethod
    def claim_timers(
        self,
        owner: str,
        machines: Sequence[str],
        *,
        limit: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        now: float | None = None,
    ) -> list[TimerClaim]:
        """Lease up to ``limit`` instances of ``machines`` (by name) with a timer due at
        ``now`` (default: the time), whose lease is free or expired; earliest due first.
        The caller fires them (``chart.resume(id, store=...).run_due()``), then
        :meth:`release_timers`."""

    @abstractmethod
    def release_timers(self, instance_id: str, owner: str) -> None:
        """Give up ``owner``'s lease on the instance (a no-op if another holds it)."""

    async def await_work(self, owner: str, timeout: float) -> None:
        """Wait at most ``timeout`` seconds for a sign that work may be claimable.

        A :class:`~agentnb.Worker` (``owner``) calls it when its last :meth:`claim` came
        back short; a sign given since that claim counts (none is lost in between). This
        default waits the timeout out (the worker polls, with a bounded backoff); a backend
        that can be told — PostgreSQL's ``LISTEN``/``NOTIFY``, the memory store's own
        writes — returns as soon as it is.
        """
        import asyncio

        await asyncio.sleep(timeout)

    # -- the async face: what the driver and the Worker await ------------------------------

    blocking: ClassVar[bool] = True
    """Whether this store's sync methods may wait (on a disk, a lock held by another
    process, a network). Then the async twins run them in a worker thread and the event
    loop goes on meanwhile; a store that never waits sets it false and its twins call them
    directly (no thread hop per step)."""

    async def offload(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Call ``fn`` — sync code that uses this store — without blocking the event loop:
        in a worker thread when the store is :attr:`blocking`, else directly. What every
        default twin does; the store must be safe to use from another thread (SQLite: one
        connection under a lock; memory: its lock).

        A one-run sync call (``run.run()``, ``run.step()``, ``workflow.invoke()``) blocks
        its caller anyway: inside it (:func:`agentnb._aio.alone`) ``fn`` is called
        directly too, sparing a step the thread hop (about as long as a SQLite write)."""
        if not self.blocking or driving_alone():
            return fn(*args, **kwargs)
        import asyncio  # here: importing agentnb does not import asyncio

        return await asyncio.to_thread(fn, *args, **kwargs)

    async def aget_run(self, run_id: str) -> RunRecord:
        """Awaitable twin of :meth:`get_run`."""
        return await self.offload(self.get_run, run_id)

    async def aacquire(
        self, run_id: str, owner: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> RunRecord:
        """Awaitable twin of :meth:`acquire`."""
        return await self.offload(self.acquire, run_id, owner, lease_seconds=lease_seconds)

    async def acommit(
        self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float
    ) -> None:
        """Awaitable twin of :meth:`commit`."""
        await self.offload(self.commit, run_id, fence, change, lease_seconds=lease_seconds)

    async def arelease(self, run_id: str, fence: int) -> None:
        """Awaitable twin of :meth:`release`."""
        await self.offload(self.release, run_id, fence)

    async def acheckpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        """Awaitable twin of :meth:`checkpoint`."""
        return await self.offload(self.checkpoint, run_id, step)

    async def asave_write(self, run_id: str, fence: int, write: PendingWrite) -> None:
        """Awaitable twin of :meth:`save_write`."""
        await self.offload(self.save_write, run_id, fence, write)

    async def apending_writes(self, run_id: str, step: int) -> list[PendingWrite]:
        """Awaitable twin of :meth:`pending_writes`."""
        return await self.offload(self.pending_writes, run_id, step)

    async def apending_tasks(self, run_id: str) -> list[PendingTask]:
        """Awaitable twin of :meth:`pending_tasks`."""
        return await self.offload(self.pending_tasks, run_id)

    async def aclaim(
        self,
        owner: str,
        graphs: Mapping[str, str],
        *,
        limit: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        run_ids: Sequence[str] | None = None,
    ) -> list[RunRecord]:
        """Awaitable twin of :meth:`claim`."""
        return await self.offload(
            self.claim, owner, graphs, limit=limit, lease_seconds=lease_seconds, run_ids=run_ids
        )

    async def arenew(
        self, owner: str, run_ids: Sequence[str], *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> list[str]:
        """Awaitable twin of :meth:`renew`."""
        return await self.offload(self.renew, owner, run_ids, lease_seconds=lease_seconds)

    async def arequeue(self, run_id: str, fence: int) -> bool:
        """Awaitable twin of :meth:`requeue`."""
        return await self.offload(self.requeue, run_id, fence)

    async def aclaim_timers(
        self,
        owner: str,
        machines: Sequence[str],
        *,
        limit: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        now: float | None = None,
    ) -> list[TimerClaim]:
        """Awaitable twin of :meth:`claim_timers`."""
        return await self.offload(
            self.claim_timers, owner, machines, limit=limit, lease_seconds=lease_seconds, now=now
        )

    async def arelease_timers(self, instance_id: str, owner: str) -> None:
        """Awaitable twin of :meth:`release_timers`."""
        await self.offload(self.release_timers, instance_id, owner)

    async def arecorded_effect(self, key: str) -> str | None:
        """Awaitable twin of :meth:`recorded_effect` (``ctx.aonce`` reads the ledger)."""
        return await self.offload(self.recorded_effect, key)

    async def arecord_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        """Awaitable twin of :meth:`record_effect`."""
        return await self.offload(
            self.record_effect,
            key,
            run_id=run_id,
            step=step,
            node=node,
            name=name,
            result_json=result_json,
        )

    # -- supersteps ----------------------------------------------------------------------

    @abstractmethod
    def save_write(self, run_id: str, fence: int, write: PendingWrite) -> None:
        """Save one finished task's result if ``fence`` still owns the run; else ``LeaseLost``.

        A task already saved for that run, superstep and task id keeps its first result.
        """

    @abstractmethod
    def pending_writes(self, run_id: str, step: int) -> list[PendingWrite]:
        """The saved task results of the superstep starting at checkpoint ``step``."""

    @abstractmethod
    def pending_tasks(self, run_id: str) -> list[PendingTask]:
        """The tasks of the run's current superstep held by interrupts, with decisions."""

    # -- decisions -----------------------------------------------------------------------

    @abstractmethod
    def decide(
        self,
        run_id: str,
        decision: str,
        approver: str,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        edit: DecisionEdit | None = None,
        identity: Identity | None = None,
        checks: Mapping[str, PolicyCheck] | None = None,
    ) -> Decision:
        """Decide a pending run exactly once, and audit the attempt either way.

        An approval may carry an ``edit`` (edited state, or an answer): it is saved in the
        same transaction, and only if the decision is accepted.

        When a superstep holds several tasks, each is decided on its own: name it with
        ``task`` (it may be left out when only one is pending). The run becomes
        ``approved`` once every held task is; rejecting one rejects the run. An approval
        of a held task may carry an edit of that task's input (``edit.update``): it is
        kept on the task's row (:attr:`PendingTask.update`), and refused
        (:class:`~agentnb.errors.ConflictingEdit`, audited) when one of its
        ``edit.replaces`` keys is replaced by another held task's accepted edit.

        ``approved`` makes the run ``approved`` (a worker continues it); ``rejected`` ends
        it. ``approver`` is the name given, kept for the audit; ``identity`` is who the
        process vouches for (default: this store's :attr:`identity` provider), the one the
        run's approver policy is checked against. ``checks`` are the callable policies of
        the workflow's interrupts, by key, for a process that loaded them.

        Raises :class:`~agentnb.errors.InvalidDecision` (nothing stored),
        :class:`~agentnb.errors.RunNotFound`, :class:`~agentnb.errors.ApprovalNotPending`,
        :class:`~agentnb.errors.NotAuthorized` (or :class:`~agentnb.errors.PolicyUnavailable`),
        :class:`~agentnb.errors.StaleApproval` or :class:`~agentnb.errors.ConflictingEdit`
        (all audited as refused).
        """

    # -- reading -------------------------------------------------------------------------

    @abstractmethod
    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        """The checkpoint after ``step`` nodes (default: the latest)."""

    @abstractmethod
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """Every checkpoint of the run, oldest first."""

    @abstractmethod
    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """The run's events with ``seq > after``, in order."""

    @abstractmethod
    def decisions(self, run_id: str | None = None) -> list[Decision]:
        """The decision audit (accepted and refused), oldest first."""

    # -- state machines --------------------------------------------------------------------

    @property
    @abstractmethod
    def machines(self) -> MachineStore:
        """The store of state-machine instances kept beside the runs.

        It implements :class:`~agentnb.fsm.instance.MachineStore`; pass the checkpointer
        itself as ``machine.start(store=checkpointer)``.
        """

    # -- side effects ----------------------------------------------------------------------

    @abstractmethod
    def recorded_effect(self, key: str) -> str | None:
        """The recorded result (JSON) of the side effect ``key``, or ``None`` if not done."""

    @abstractmethod
    def record_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        """Record a side effect's result once; return the stored JSON (the first wins)."""

    @abstractmethod
    def effects(self, run_id: str) -> list[Effect]:
        """The run's recorded side effects, oldest first."""

    def run_status(self, run_id: str) -> Status:
        """Shortcut for ``get_run(run_id).status``."""
        return self.get_run(run_id).status

    # -- history ---------------------------------------------------------------------------

    def list_checkpoints(self, run_id: str) -> list[CheckpointInfo]:
        """Every checkpoint's step, node and time, oldest first, without decoding a state.

        :meth:`checkpoint` loads any one of them. Backends answer from an index; this
        default (for a backend without one) decodes them all.
        """
        from agentnb.store.history import CheckpointInfo

        return [CheckpointInfo(c.run_id, c.step, c.node, c.at) for c in self.checkpoints(run_id)]

    # -- retention (rules: agentnb.store.retention) ----------------------------------------

    @abstractmethod
    def delete_run(self, run_id: str, *, include_audit: bool = False) -> Pruned:
        """Delete one run: its row, checkpoints, events, policy and effect ledger.

        The decision audit stays unless ``include_audit``. A run that is pending, approved
        or held by a live lease is refused with :class:`~agentnb.errors.RunActive`
        (nothing deleted); an unknown id raises :class:`~agentnb.errors.RunNotFound`.
        """

    @abstractmethod
    def prune(
        self,
        *,
        before: float | datetime.datetime,
        status: Status | str | None = None,
        include_audit: bool = False,
    ) -> Pruned:
        """Delete the runs that ended before ``before`` (epoch seconds or a datetime).

        Takes ``completed``, ``rejected`` and ``failed`` runs, or only ``status`` (one of
        those or ``cancelled``); running, pending and approved runs are never taken
        (another status raises :class:`~agentnb.errors.InvalidRetention`). Each run goes
        in a transaction of its own, as :meth:`delete_run` does, and the space is returned.
        With ``include_audit``, the audit older than ``before`` that earlier prunes kept
        for runs since deleted goes too.

        Example:
            >>> import time
            >>> from agentnb import MemoryCheckpointer
            >>> MemoryCheckpointer().prune(before=time.time() - 30 * 86400).runs
            ()
        """


def decision_status(decision: str) -> Status:
    return Status.APPROVED if decision == "approved" else Status.REJECTED


def task_refusal(
    run_id: str,
    task: str | None,
    held: Sequence[PendingTask],
    run: RunRecord,
    expected_digest: str | None,
) -> tuple[Exception, str]:
    """Why a decision about a held task is refused: the error, and the audit's reason."""
    from agentnb.errors import TaskNotNamed

    waiting = [t.task_id for t in held if t.status == "pending"]
    if task is None and len(waiting) > 1 and run.status == Status.PENDING:
        return TaskNotNamed(run_id, waiting), "ambiguous: several tasks pending"
    found = next((t for t in held if t.task_id == task), None)
    if run.status != Status.PENDING or found is None or found.status != "pending":
        by = found.decided_by if found is not None else run.decided_by
        status = found.status if found is not None and found.status != "pending" else run.status
        return ApprovalNotPending(run_id, status, by), f"not pending: {status}"
    stale = StaleApproval(run_id, expected_digest or "", found.digest)
    return stale, "stale: the pending state changed"
