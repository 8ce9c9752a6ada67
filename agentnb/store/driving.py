"""What the runtime drives runs with: the checkpointer calls of a step, each with its
awaitable twin.

:class:`Driving` is the part of the :class:`~agentnb.store.base.Checkpointer` contract the
driver and the :class:`~agentnb.Worker` call while they drive runs: leases, step commits,
claims, pending writes, the effects ledger. Each has a twin named with an ``a``
(:meth:`Driving.acommit` for :meth:`Driving.commit`, ...): the driver and the worker await
those, so a slow store (a busy SQLite file, a database over a network) never blocks the
event loop on which one worker drives hundreds of runs. By default a twin runs its sync
method in a worker thread (:meth:`Driving.offload`); a store that never waits (the memory
store: :attr:`Driving.blocking` is false) calls it directly, and a backend with a native
async driver may override the twins. The sync methods stay, for scripts, notebooks and
the CLI.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar, ParamSpec, TypeVar

from agentnb._aio import driving_alone, has_threads
from agentnb.store.leases import DEFAULT_LEASE_SECONDS
from agentnb.store.records import Checkpoint, PendingTask, PendingWrite, RunRecord

if TYPE_CHECKING:
    from agentnb.store.claims import TimerClaim
    from agentnb.store.writes import StepCommit

__all__ = ["Driving"]

P = ParamSpec("P")
T = TypeVar("T")


class Driving(ABC):
    """The calls of a step, sync and awaitable (see the module's docstring)."""

    # -- reading what a step needs ---------------------------------------------------------

    @abstractmethod
    def get_run(self, run_id: str) -> RunRecord:
        """The run's row, or :class:`~agentnb.errors.RunNotFound`."""

    @abstractmethod
    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        """The checkpoint after ``step`` nodes (default: the latest)."""

    # -- driving -------------------------------------------------------------------------

    @abstractmethod
    def acquire(
        self, run_id: str, owner: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> RunRecord:
        """Take the run's lease for ``owner`` and return the row with its new fence.

        Succeeds when the lease is free, expired, already ``owner``'s, or held by a dead
        process on this host; otherwise raises :class:`~agentnb.errors.RunBusy`.
        Expiry is decided on the store's clock — a SQL store's is the database's
        (``agentnb.store.dialect.NOW``), never the caller's — and so are the
        lease's end and every renewal (:meth:`commit`, :meth:`renew`, :meth:`claim`).
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
        ``agentnb.store.claims``). Each claimed run's fence is bumped, as by
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
        ``now`` (default: the store's time — a SQL store's is the database's clock), whose
        lease is free or expired on the store's clock; earliest due first. The caller
        fires those due at the claim's moment
        (``chart.resume(id, store=...).run_due(now=claim.now)``), then
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

    # -- side effects ----------------------------------------------------------------------

    @abstractmethod
    def recorded_effect(self, key: str) -> str | None:
        """The recorded result (JSON) of the side effect ``key``, or ``None`` if not done."""

    @abstractmethod
    def record_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        """Record a side effect's result once; return the stored JSON (the first wins)."""

    # -- the async face: what the driver and the Worker await ------------------------------

    blocking: ClassVar[bool] = True
    """Whether this store's sync methods may wait (on a disk, a lock held by another
    process, a network). Then the async twins run them in a worker thread and the event
    loop goes on meanwhile; a store that never waits sets it false and its twins call them
    directly (no thread hop per step)."""

    def direct(self) -> bool:
        """Whether :meth:`offload` calls a sync method on the caller's thread now (the
        store never blocks, or a one-run sync call drives it). In the browser there is
        no thread to offload to."""
        return not self.blocking or driving_alone() or not has_threads()

    async def offload(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Call ``fn`` — sync code that uses this store — without blocking the event loop:
        in a worker thread when the store is :attr:`blocking`, else directly. What every
        default twin does; the store must be safe to use from another thread (SQLite: one
        connection under a lock; memory: its lock).

        A one-run sync call (``run.run()``, ``run.step()``, ``workflow.invoke()``) blocks
        its caller anyway: inside it (``agentnb._aio.alone``) ``fn`` is called
        directly too, sparing a step the thread hop (about as long as a SQLite write)."""
        if self.direct():
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
