"""``Worker``: claims runnable runs from a checkpointer and drives them, many at once.

One worker is one event loop in one process: it claims up to ``concurrency`` runs at a
time (:meth:`~agentnb.Checkpointer.claim`, atomic, so any number of workers on any number
of machines share one store without two driving a run), drives each as a task on the
loop — a node awaiting I/O lets the others run — and claims again as slots free up.
Every store call it and the driver make is awaited (the store's async face,
:meth:`~agentnb.Checkpointer.acommit` and its siblings), so a slow store write holds a
thread, never the loop the other runs share.
Runnable work is what :mod:`agentnb.store.claims` says: runs queued by
``workflow.submit``, runs approved or answered by a person anywhere (a panel, the CLI,
another kernel), runs whose worker died (their lease expired) — and, for the statecharts
given as ``machines=``, instances whose durable timers are due.

When a claim comes back short, the worker waits for the store's wake-up
(:meth:`~agentnb.Checkpointer.await_work`: ``LISTEN``/``NOTIFY`` on PostgreSQL, the
memory store's own writes) or, on SQLite, polls with a backoff that doubles from
``poll_min`` to ``poll_max`` and starts again at the next run it finds.

:meth:`stop` (or SIGTERM / SIGINT in :meth:`run`) is graceful: nothing new is claimed,
each run finishes the superstep in flight, commits it, gives its lease back and is put
back in the queue for the next worker — no node is cut off, nothing is left leased.

A run whose step will not commit (the store refused it for anything but being
unreachable) is not put back for a claim at once — that drove one node ~800 times a second,
its side effects with it: its worker keeps the lease and drives it again after waits that
double from :data:`RETRY_WAIT`, and after :data:`ATTEMPTS` drives records it failed at its
node (:class:`~agentnb.errors.StepNotCommitted`). An unreachable store fails no run.

The panel's "continue after a decision" is this component too
(:meth:`acontinue`): one mechanism, whoever continues a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentnb._aio import run_sync
from agentnb.errors import (
    AgentnbError,
    DefinitionError,
    LeaseLost,
    RunBusy,
    StepNotCommitted,
    StoreError,
    StoreUnavailable,
)
from agentnb.graph.commits import Committer, Position
from agentnb.graph.run import Run
from agentnb.graph.superstep import Frontier
from agentnb.store.base import new_owner
from agentnb.store.claims import RESUMABLE
from agentnb.store.records import Event, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.fsm.chart import Statechart
    from agentnb.graph.workflow import Workflow
    from agentnb.store.base import Checkpointer
    from agentnb.store.claims import TimerClaim

__all__ = ["ATTEMPTS", "RETRY_WAIT", "Worker", "WorkerStats"]

log = logging.getLogger("agentnb.worker")

ATTEMPTS = 3
"""How many times a worker drives a run whose step will not commit before it records the
run failed (:class:`~agentnb.errors.StepNotCommitted`)."""
RETRY_WAIT = 0.1
"""Seconds before the second of those drives; the wait doubles before each next one (up
to the worker's ``poll_max``)."""

_ENDED = frozenset({Status.COMPLETED, Status.PENDING, Status.FAILED, Status.REJECTED})
"""How a drive may end with a commit of its own (which gave the lease back)."""


@dataclass(frozen=True, slots=True)
class WorkerStats:
    """What a worker has done so far (counted per drive of a claimed run)."""

    claimed: int = 0
    """Runs claimed (a run claimed again after a pause counts again)."""
    completed: int = 0
    paused: int = 0
    """Drives that ended at an interrupt, waiting for a person."""
    failed: int = 0
    """Drives that ended with the run failed (a node raised, the step budget ran out)."""
    requeued: int = 0
    """Runs given back to the queue because the worker stopped mid-run."""
    lost: int = 0
    """Runs another worker took over (this one's lease had expired): fenced out."""
    steps: int = 0
    """Supersteps committed."""
    timers: int = 0
    """Delayed events of state machines fired."""


_COUNTS = tuple(f.name for f in dataclasses.fields(WorkerStats))


class Worker:
    """Claims and drives runs of ``workflows`` from their checkpointer.

    Args:
        *workflows: the workflows this worker has the code for (each by its name; they
            must share one checkpointer). Runs of other workflows, or of another shape of
            these, are never claimed.
        machines: statecharts whose instances' due timers this worker fires (by name;
            kept in the same checkpointer).
        store: the checkpointer, when no workflow names it (a worker for machines only).
        concurrency: how many runs are driven at once on the event loop.
        poll_min, poll_max: the bounds, in seconds, of the wait between claims that came
            back empty (doubling from the one to the other), when the store cannot say
            when new work arrives.
        owner: the lease owner id (default: ``host:pid:random``).

    Example:
        >>> from agentnb import StateGraph, Worker
        >>> g = StateGraph("echo").add_node("say", lambda s: {"out": s["text"]})
        >>> wf = g.set_entry_point("say").compile()
        >>> ids = [wf.submit({"text": t}).run_id for t in ("a", "b")]
        >>> Worker(wf, concurrency=8).run(until_idle=True).completed
        2
    """

    def __init__(
        self,
        *workflows: Workflow,
        machines: Sequence[Statechart] = (),
        store: Checkpointer | None = None,
        concurrency: int = 16,
        poll_min: float = 0.02,
        poll_max: float = 1.0,
        owner: str | None = None,
    ) -> None:
        if not workflows and not (machines and store is not None):
            raise DefinitionError(
                "a Worker needs at least one workflow (or machines= and their store=)",
                fix="Pass Worker(workflow, ...).",
            )
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise DefinitionError(
                f"concurrency must be a positive int, not {concurrency!r}",
                culprit="concurrency",
                fix="Pass how many runs to drive at once, e.g. concurrency=16.",
            )
        if not 0 < poll_min <= poll_max:
            raise DefinitionError(
                f"poll_min={poll_min!r}, poll_max={poll_max!r}: need 0 < poll_min <= poll_max",
                culprit="poll_min",
            )
        self.store: Checkpointer = store if store is not None else workflows[0].checkpointer
        self.workflows: dict[str, Workflow] = {}
        for wf in workflows:
            if wf.checkpointer is not self.store:
                raise DefinitionError(
                    f"workflow {wf.name!r} saves its runs in another checkpointer than "
                    "the worker's",
                    culprit=wf.name,
                    fix="Compile every workflow of one Worker with the same checkpointer.",
                )
            if wf.name in self.workflows:
                raise DefinitionError(
                    f"two workflows named {wf.name!r}: a worker tells runs apart by name",
                    culprit=wf.name,
                    fix="Give each graph its own name: StateGraph('name').",
                )
            self.workflows[wf.name] = wf
        self.graphs = {name: wf.shape for name, wf in self.workflows.items()}
        self.machines: dict[str, Statechart] = {}
        for chart in machines:
            if chart.name in self.machines:
                raise DefinitionError(
                    f"two machines named {chart.name!r}: a worker tells instances apart by name",
                    culprit=chart.name,
                )
            self.machines[chart.name] = chart
        self.concurrency = concurrency
        self.poll_min, self.poll_max = float(poll_min), float(poll_max)
        self.owner = owner or new_owner()
        self.lease_seconds = min((wf.lease_seconds for wf in workflows), default=30.0)
        self._counts = dict.fromkeys(_COUNTS, 0)
        self._counting = threading.Lock()
        self._stopping = False
        self._halt: asyncio.Event | None = None  # set on the loop by stop()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._driving: dict[str, asyncio.Task[None]] = {}
        self._continuing: set[str] = set()  # runs acontinue() drives

    def __repr__(self) -> str:
        names = ", ".join(self.workflows)
        return f"<Worker {self.owner} [{names}] driving {len(self._driving)}/{self.concurrency}>"

    @property
    def stats(self) -> WorkerStats:
        """Counts of what this worker did."""
        with self._counting:
            return WorkerStats(**self._counts)

    def _count(self, **more: int) -> None:
        with self._counting:  # timers are fired in threads
            counts = self._counts
            for key, n in more.items():
                counts[key] += n

    # -- stopping ------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop gracefully, from any thread or a signal handler: claim nothing more; each
        run finishes its superstep in flight, gives its lease back and goes back to the
        queue. :meth:`arun` returns once they have."""
        if not self._stopping:
            log.info("stopping: no new claims; the steps in flight finish, then go back")
        self._stopping = True
        loop, halt = self._loop, self._halt
        if loop is not None and halt is not None:
            # A closed loop raises RuntimeError: then nothing is running.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(halt.set)

    def _halting(self) -> bool:
        return self._stopping

    # -- running -------------------------------------------------------------------------

    async def arun(self, *, until_idle: bool = False, signals: bool = False) -> WorkerStats:
        """Claim and drive runs until :meth:`stop` (or, ``until_idle``, until nothing is
        left to claim and nothing is being driven); returns the counts.

        ``signals`` makes SIGTERM and SIGINT call :meth:`stop` (main thread only).
        """
        loop = asyncio.get_running_loop()
        self._loop, self._halt = loop, asyncio.Event()
        if self._stopping:
            self._halt.set()
        installed = self._install_signals(loop) if signals else []
        wait = self.poll_min
        halted = asyncio.ensure_future(self._halt.wait())
        beating = asyncio.ensure_future(self._heartbeat())
        try:
            while not self._stopping:
                free = self.concurrency - len(self._driving)
                claimed: list[tuple[RunRecord, Run | None]] = []
                timers: list[TimerClaim] = []
                if free > 0:
                    try:
                        claimed, timers = await self._claim(free)
                    except StoreError as exc:  # e.g. locked past busy_timeout: back off
                        log.warning("claiming: %s", exc)
                    for record, run in claimed:
                        self._start(record, run)
                    for due in timers:
                        self._fire(due)
                got = len(claimed) + len(timers)
                if until_idle and not got and not self._driving:
                    break
                waiters: set[asyncio.Future[Any]] = {halted, *self._driving.values()}
                if got:
                    wait = self.poll_min
                if got < free:  # nothing more to claim now: wait for news
                    waiters.add(asyncio.ensure_future(self.store.await_work(self.owner, wait)))
                    wait = min(wait * 2, self.poll_max)
                elif got == free and free > 0:
                    continue  # maybe more work waiting; claim again as slots free up
                done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                for extra in waiters - {halted, *self._driving.values()} - done:
                    extra.cancel()
        finally:
            halted.cancel()
            if self._driving:
                await asyncio.gather(*self._driving.values(), return_exceptions=True)
            beating.cancel()
            for sig in installed:
                loop.remove_signal_handler(sig)
            self._loop = self._halt = None
        return self.stats

    def run(self, *, until_idle: bool = False, signals: bool = False) -> WorkerStats:
        """Sync twin of :meth:`arun`."""
        return run_sync(self.arun(until_idle=until_idle, signals=signals))

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> list[signal.Signals]:
        if threading.current_thread() is not threading.main_thread():
            return []
        installed = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
            installed.append(sig)
        return installed

    async def _heartbeat(self) -> None:
        """Renew the leases of the runs being driven every third of a lease: a node may
        run longer than the lease, and only a worker that stopped (or hangs) loses them."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            held = [k for k in [*self._driving, *self._continuing] if not k.startswith("timers:")]
            if held:
                try:
                    await self.store.arenew(self.owner, held, lease_seconds=self.lease_seconds)
                except AgentnbError as exc:  # the next beat tries again; the lease is the limit
                    log.warning("renewing leases: %s: %s", type(exc).__name__, exc)

    async def _claim(
        self, free: int
    ) -> tuple[list[tuple[RunRecord, Run | None]], list[TimerClaim]]:
        """Runs first, then due timers for the slots left."""
        store, owner, lease = self.store, self.owner, self.lease_seconds
        runs = await store.offload(self._claim_runs, free) if self.graphs else []
        left = free - len(runs)
        timers = (
            await store.aclaim_timers(owner, list(self.machines), limit=left, lease_seconds=lease)
            if self.machines and left > 0
            else []
        )
        return runs, timers

    def _claim_runs(self, free: int) -> list[tuple[RunRecord, Run | None]]:
        """Claim, and load each claimed run's checkpoint in the same trip off the loop (a
        thread hop per run less); a run that fails to load here is loaded again by its
        drive, which reports why."""
        records = self.store.claim(
            self.owner, self.graphs, limit=free, lease_seconds=self.lease_seconds
        )
        loaded: list[tuple[RunRecord, Run | None]] = []
        for record in records:
            try:
                loaded.append((record, Run(self.workflows[record.graph], record)))
            except AgentnbError:
                loaded.append((record, None))
        return loaded

    def _fire(self, due: TimerClaim) -> None:
        task = asyncio.ensure_future(self._fire_due(due))
        key = f"timers:{due.instance_id}"
        self._driving[key] = task
        task.add_done_callback(lambda _: self._driving.pop(key, None))

    async def _fire_due(self, due: TimerClaim) -> None:
        """Fire the instance's due timers, each its own committed step, then give it back.

        The machine's sync API runs in a thread of its own: it runs the chart's actions
        (user code) and its own store writes, not only a store call."""
        try:
            self._count(timers=await asyncio.to_thread(self._run_due, due))
        except AgentnbError as exc:
            log.warning("instance %s: %s: %s", due.instance_id, type(exc).__name__, exc)
        finally:
            await self.store.arelease_timers(due.instance_id, self.owner)

    def _run_due(self, due: TimerClaim) -> int:
        instance = self.machines[due.machine].resume(due.instance_id, store=self.store)
        # Due by the store's clock (the database's), which found them due: not this
        # process's, which may run behind it and find nothing to fire.
        return len(instance.run_due(now=due.now))

    def _start(self, record: RunRecord, run: Run | None) -> None:
        if record.run_id in self._driving:
            # Its lease ran out under this very worker (the loop was blocked past the
            # heartbeat) and the claim took it again: the drive in flight is fenced out at
            # its next write; never drive one run twice in one process.
            log.warning("run %s: lease expired while this worker drove it", record.run_id)
            return
        task = asyncio.ensure_future(self._drain(record, run))
        self._driving[record.run_id] = task
        task.add_done_callback(lambda _: self._driving.pop(record.run_id, None))

    async def _drain(self, record: RunRecord, run: Run | None) -> None:
        async for _ in self._drive(record, run):
            pass

    # -- one run ---------------------------------------------------------------------------

    async def acontinue(self, run_id: str) -> AsyncIterator[Event]:
        """Claim ``run_id`` if it is runnable (approved, queued, or its worker is gone) and
        drive it to its next pause or its end, yielding its events; yields nothing when
        another worker has it or it is not runnable. What a panel does after a decision."""
        claimed = await self.store.aclaim(
            self.owner, self.graphs, limit=1, lease_seconds=self.lease_seconds, run_ids=[run_id]
        )
        if not claimed:
            return
        self._continuing.add(run_id)
        beating = asyncio.ensure_future(self._heartbeat()) if self._loop is None else None
        try:
            async for event in self._drive(claimed[0]):
                yield event
        finally:
            self._continuing.discard(run_id)
            if beating is not None:
                beating.cancel()

    async def _drive(self, record: RunRecord, run: Run | None = None) -> AsyncIterator[Event]:
        """Drive a claimed run until it pauses, ends, or the worker stops; then make sure
        its lease is given back and, if it is mid-run, that it is queued again.

        The claim's row is the run as it stands, leased to this worker with a new fence:
        the run is built from it (no second read of the row) and driven on that lease (no
        acquire). How the drive ended is in the run's own record — the last commit's
        status, the lease given back — so a run that completed, paused or failed costs no
        further store call; only a drive cut short is looked up again.

        A drive whose step would not commit (anything but the store being unreachable,
        or another worker's lease) leaves the run as its last checkpoint has it: it is
        driven again on a lease this worker takes back at once (no other worker takes a
        running run it holds), after a wait that doubles, and after :data:`ATTEMPTS`
        drives it is recorded failed (:class:`~agentnb.errors.StepNotCommitted`) — never
        requeued to run the node, and repeat its side effects, without end.
        """
        self._count(claimed=1)
        wf = self.workflows[record.graph]
        run_id = record.run_id
        tries = failures = 0  # drives that did not commit; those not for want of a store
        while True:
            error: Exception | None = None
            try:
                if run is None:
                    run = await self.store.offload(Run, wf, record)
                run.owner = self.owner  # the claim's lease, driven as it is
                async for event in run._drive(None, halt=self._halting, leased=True):
                    if event.type == "state_update":
                        self._count(steps=1)
                    yield event
            except LeaseLost:
                self._count(lost=1)
                log.warning("run %s: another worker took it over (this lease expired)", run_id)
                return
            except Exception as exc:  # a node's own exception, recorded failed by the driver
                log.warning("run %s: %s: %s", run_id, type(exc).__name__, exc)
                error = exc
            try:
                ended = run._record if run is not None else None
                if ended is not None and ended.status in _ENDED:
                    self._tally(ended.status)  # committed under this lease, which it gave back
                    return
                if error is None:  # stopped between supersteps, lease given back
                    if ended is not None and await self.store.arequeue(run_id, ended.fence):
                        self._count(requeued=1)
                    return
                tries += 1
                failures += not isinstance(error, StoreUnavailable)
                again = await self._again(run_id, tries, failures, error)
                if again is None:
                    return
                record, run = again, None
            except Exception as exc:  # deleted meanwhile, the store is gone, or broken
                log.warning("run %s: %s: %s", run_id, type(exc).__name__, exc)
                return

    async def _again(
        self, run_id: str, tries: int, failures: int, error: Exception
    ) -> RunRecord | None:
        """After ``tries`` drives of a run that raised without committing (the last one
        ``error``; ``failures`` of them not for want of a reachable store): the run
        leased to this worker again, to drive once more after a wait that doubles — or
        ``None`` when it is not this worker's to drive (another has it, it moved on, the
        worker is stopping: then it is queued again) or has been recorded failed.

        An unreachable store (:class:`~agentnb.errors.StoreUnavailable`) never fails a
        run: the worker waits for it, as long as it holds the lease."""
        try:
            record = await self.store.aacquire(run_id, self.owner, lease_seconds=self.lease_seconds)
        except RunBusy:  # someone (a notebook stepping it) holds it now: theirs
            return None
        if record.status not in RESUMABLE:  # it moved on meanwhile (cancelled, decided)
            await self.store.arelease(run_id, record.fence)
            return None
        if failures >= ATTEMPTS:
            await self._give_up(record, failures, error)
            return None
        if not self._stopping:
            wait = min(RETRY_WAIT * 2 ** (tries - 1), max(self.poll_max, RETRY_WAIT))
            await asyncio.sleep(wait)
        if self._stopping:
            await self.store.arelease(run_id, record.fence)
            if await self.store.arequeue(run_id, record.fence):
                self._count(requeued=1)
            return None
        log.warning("run %s: driving it again (attempt %d)", run_id, tries + 1)
        return record

    async def _give_up(self, record: RunRecord, attempts: int, error: Exception) -> None:
        """Record the run failed at its node, its last checkpoint intact: the failure is
        committed on the lease held (``record``'s fence), as the driver commits one."""
        failure = StepNotCommitted(record.run_id, record.node, record.step, attempts, error)
        failure.__cause__ = error
        log.error("run %s: %s", record.run_id, failure)
        position = Position(record, {}, Frontier.at(record.node))
        committer = Committer(self.workflows[record.graph], self.owner, position)
        committer.fence = record.fence
        await committer._fail(record.node, record.step, failure)
        self._count(failed=1)

    def _tally(self, status: Status) -> None:
        if status == Status.COMPLETED:
            self._count(completed=1)
        elif status == Status.PENDING:
            self._count(paused=1)
        elif status in (Status.FAILED, Status.REJECTED):
            self._count(failed=1)
