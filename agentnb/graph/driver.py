"""The loop that executes supersteps: one lease, one transaction per superstep.

A superstep runs the tasks :func:`~agentnb.graph.superstep.plan` finds in the last
checkpoint. One task (a linear run) is called on the event loop and its step written in
one commit, as it always was. Several run concurrently — async nodes on the event loop,
sync nodes in the workflow's thread pool, at most ``max_concurrency`` at once — and each
finished task's result is saved on its own (a *pending write*), so a worker resuming after
a crash runs only the tasks that had not finished. When all are done their deltas merge
in plan order through the reducers, the merged state is routed, and checkpoint + events
are committed together. A pause (interrupt) or the end is folded into that same commit.

The driver never writes the :class:`~agentnb.graph.run.Run`'s fields: it ends with a
:class:`Position` the run adopts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import itertools
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentnb._json import check, dumps, loads
from agentnb.errors import (
    BreakerOpen,
    ConflictingUpdate,
    InvalidState,
    NodeFailed,
    RoutingError,
    StepBudgetExhausted,
    describe,
)
from agentnb.graph.builder import END
from agentnb.graph.copies import StateCopy
from agentnb.graph.questions import Asked
from agentnb.graph.run import NodeContext
from agentnb.graph.state import append, apply_delta, json_copy, merge_writes
from agentnb.graph.streams import Emitted, Live, Streams
from agentnb.graph.subgraph import ChildPaused, ChildStepped, drive_child
from agentnb.graph.superstep import Frontier, Task, advance, plan
from agentnb.resilience import guarded_call
from agentnb.store.base import CheckpointWrite, StepCommit, pending_digest
from agentnb.store.chains import Chain
from agentnb.store.records import Event, EventType, PendingWrite, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.graph.builder import NodeSpec
    from agentnb.graph.workflow import Workflow

__all__ = ["Driver", "Position"]

_YIELD_EVERY = 0.005
"""Seconds between forced trips to the event loop, so cancellation lands even when every
node is synchronous (and other tasks, like a widget's, keep running)."""

_RUNNING, _PENDING, _COMPLETED = Status.RUNNING, Status.PENDING, Status.COMPLETED
_NODE_START, _STATE_UPDATE = EventType.NODE_START, EventType.STATE_UPDATE
Sink = Callable[[str, dict[str, Any]], None]
_SCALARS = frozenset({str, int, bool, type(None)})
"""Exact types a delta's value may have to be JSON as it is (a float may be NaN)."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where a run stands: its row, its live state (never changed in place: nodes get a
    :class:`~agentnb.graph.copies.StateCopy`), its next tasks, and the stored chain its
    next checkpoint extends (``None``: unknown, so the next checkpoint is a snapshot)."""

    record: RunRecord
    state: dict[str, Any]
    frontier: Frontier
    chain: Chain | None = None


class _Failure(Exception):
    """Carries the typed error of a task out of a superstep (never escapes the driver)."""

    def __init__(self, node: str, error: BaseException) -> None:
        self.node, self.error = node, error


class Driver:
    """Drives one run for the duration of one call, from ``position`` on."""

    def __init__(self, workflow: Workflow, owner: str, position: Position) -> None:
        self.workflow = workflow
        self.store = workflow.checkpointer
        self.owner = owner
        self.run_id = position.record.run_id
        self.start = position
        self.fence = 0
        self.released = False
        self.pending: list[Event] = []  # events of the superstep in flight, not committed
        self._seqs = itertools.count(position.record.seq + 1)
        self.ran: dict[str, dict[str, Any]] = {}  # task id -> delta, in this call
        self.recovered: list[str] = []  # tasks whose saved result this call merged
        self.stepping = False  # driving one superstep: subgraphs advance one of theirs
        self.live: Live | None = None  # set by astream(mode="custom")
        self.halt: Callable[[], bool] | None = None  # asked between supersteps (a Worker stopping)
        self.approvals: dict[str, str] = {}  # task id ("" for the run) -> who approved
        # Held task id -> the edit its approval carried, in the superstep in flight: that
        # task's input, and a write of the superstep (merged before the tasks' deltas).
        self.edits: dict[str, dict[str, Any]] = {}
        # Where the run stands after the last commit; ``position`` assembles it at the end.
        self.change: StepCommit | None = None
        self.state = position.state
        self.frontier: Frontier | None = position.frontier
        self.chain = position.chain

    @property
    def position(self) -> Position:
        """Where the run stands now: what :class:`~agentnb.graph.run.Run` adopts."""
        record, change = self.start.record, self.change
        if change is not None:
            record = dataclasses.replace(
                record,
                status=change.status,
                node=change.node,
                step=change.step,
                seq=change.events[-1].seq,
                error=change.error,
                pending_digest=change.pending_digest,
            )
        if self.fence:
            record = dataclasses.replace(record, lease_owner=None, lease_expires=None)
        frontier = self.frontier if self.frontier is not None else Frontier.at(record.node)
        return Position(record, self.state, frontier, self.chain)

    def _event(self, type: str, node: str | None, step: int, payload: dict[str, Any]) -> Event:
        # next() on a count is atomic: tasks in threads draw their numbers safely.
        return Event(self.run_id, next(self._seqs), step, type, node, payload, time.time())

    async def _commit(
        self,
        change: StepCommit,
        state: dict[str, Any] | None = None,
        frontier: Frontier | None = None,
    ) -> None:
        await self.store.acommit(
            self.run_id, self.fence, change, lease_seconds=self.workflow.lease_seconds
        )
        self.released = change.release
        self.pending = []
        self.change = change
        if state is not None:
            self.state, self.frontier = state, frontier
        if self.workflow.listeners:
            self.workflow._notify(change.events)

    async def _stop(
        self, status: Status, node: str, step: int, event: Event, error: BaseException | None
    ) -> Event:
        """Commit a run-ending (or cancelling) change: state untouched, lease released."""
        await self._commit(
            StepCommit(
                status,
                node,
                step,
                sorted([*self.pending, event], key=_seq),
                error=None if error is None else {**describe(error), "node": node},
                release=True,
            )
        )
        return event

    async def _fail(self, node: str, step: int, error: BaseException) -> None:
        await self._stop(Status.FAILED, node, step, self._failed(node, step, error), error)

    async def drive(self, max_supersteps: int | None) -> AsyncIterator[Event | Emitted]:
        wf = self.workflow
        record = await self.store.aacquire(self.run_id, self.owner, lease_seconds=wf.lease_seconds)
        self.fence = record.fence
        start = self.start.record
        if record.step != start.step or record.seq != start.seq:
            # Another worker moved the run, or another process decided it (perhaps with an
            # edited state): what is in memory may not be its last checkpoint.
            cp = await self.store.acheckpoint(self.run_id)
            self.state = cp.state
            self.frontier = Frontier.at(cp.node, cp.tasks)
            self.chain = None
        self.start = dataclasses.replace(self.start, record=record)
        self._seqs = itertools.count(record.seq + 1)
        self.stepping = max_supersteps == 1
        try:
            if record.status == Status.PENDING or record.status.finished:
                return
            async for event in self._loop(record, max_supersteps):
                yield event
        finally:
            if not self.released:
                await self.store.arelease(self.run_id, self.fence)

    async def _loop(
        self, record: RunRecord, max_supersteps: int | None
    ) -> AsyncIterator[Event | Emitted]:
        wf = self.workflow
        step = record.step
        approved = record.status == Status.APPROVED
        if wf.nested and approved and record.decided_by:
            # A decision taken on this run (the CLI, a panel) about a pause inside one of
            # its subgraphs is passed down to the subgraph's run (see drive_child).
            self.approvals = {"": record.decided_by}
            for row in await self.store.apending_tasks(self.run_id):
                if row.status == "approved" and row.decided_by:
                    self.approvals[row.task_id] = row.decided_by
        state = self.state
        # A linear run keeps just its next node (``frontier`` is None); anything more — a
        # fan-out, Sends, joins waiting — keeps the whole frontier.
        frontier = self.frontier
        single = frontier.single if frontier is not None else record.node
        node = "" if single is None else single
        if single is not None or (frontier is not None and not (frontier.nodes or frontier.sends)):
            node, frontier = single or END, None
        before, after_nodes = wf.interrupts_before, wf.interrupts_after
        executed = 0
        last_yield = time.monotonic()
        try:
            while True:
                if frontier is None:
                    tasks: tuple[Task, ...] = () if node == END else (wf.plain[node],)
                    gated = node if node in before else None
                else:
                    tasks = plan(wf, frontier)
                    gated = next((t.node for t in tasks if t.node in before), None)
                held: list[Task] = []
                self.edits = {}
                if gated is not None and len(tasks) > 1:
                    # An interrupt holds its own task; the others run meanwhile. Each held
                    # task is approved on its own (its row in the store says whether).
                    gated = None
                    decided = [
                        p
                        for p in await self.store.apending_tasks(self.run_id)
                        if p.step == step and p.status == "approved"
                    ]
                    approved_ids = {p.task_id for p in decided}
                    self.edits = {p.task_id: p.update for p in decided if p.update is not None}
                    held = [t for t in tasks if t.node in before and t.id not in approved_ids]
                if not tasks:
                    yield await self._finish(state, step)
                    return
                head = tasks[0].node
                if max_supersteps is not None and executed >= max_supersteps:
                    return
                # A stopping Worker's runs end between supersteps — but each runs the one
                # it was claimed for first: a run a worker holds is a step in flight, so a
                # SIGTERM just after a claim still hands the next worker a step done.
                if executed and self.halt is not None and self.halt():
                    return
                if step >= record.max_steps:
                    budget = StepBudgetExhausted(self.run_id, record.max_steps, head)
                    yield await self._stop(
                        Status.FAILED, head, step, self._failed(head, step, budget), budget
                    )
                    raise budget
                if gated is not None and not approved:
                    yield await self._pause(gated, step, state)
                    return
                approved = False

                new_frontier: Frontier | None = None
                appended: dict[str, list[Any]] | None = None  # tails the append reducer added
                settles: int | None = None
                if frontier is None:
                    start = self._event(_NODE_START, node, step, {})
                    self.pending = [start]
                    yield start
                    try:
                        call = self._invoke(tasks[0], step, state, None)
                        if self.live is None:
                            delta = await call
                        else:  # hand on what the node emits while it runs
                            running = asyncio.ensure_future(call)
                            while True:
                                await self._wake({running})
                                for item in self.live.drain():
                                    yield item
                                if running.done():
                                    break
                            delta = running.result()
                    except _Failure as failure:
                        await self._fail(node, step, failure.error)
                        raise failure.error from failure.error.__cause__
                    except (Asked, ChildPaused) as asked:
                        hold = await self._hold([tasks[0]], step, state, {node: asked}, rows=False)
                        for event in hold:
                            yield event
                        return
                    except ChildStepped as stepped:  # the parent's step is the child's
                        for event in stepped.events:
                            yield event
                        return
                    self.ran[node] = delta
                    reduce = node not in wf.nested  # a subgraph merged its keys already
                    if reduce and wf.reducers:
                        appended = _appended(delta, wf.reducers)
                    new_state = await self._merge_one(node, step, state, delta, reduce)
                    simple = wf.simple_next.get(node)
                    if simple is None:
                        new_frontier, leads = await self._route(tasks, step, new_state, ())
                        lead = leads[node]
                    else:
                        nxt, lead = simple, [simple]
                    events = self.pending
                    if simple is None:
                        events.append(self._update(node, node, step + 1, delta, lead))
                    else:
                        update = {"delta": delta, "next": simple}
                        events.append(self._event(_STATE_UPDATE, node, step + 1, update))
                else:
                    results: dict[str, dict[str, Any]] = {}
                    questions: dict[str, Asked | ChildPaused] = {}
                    runnable = [t for t in tasks if t not in held] if held else tasks
                    async for out in self._superstep(runnable, step, state, results, questions):
                        yield out
                    if len(results) + len(held) + len(questions) < len(tasks):
                        return  # a subgraph advanced one superstep of its own: not done
                    if held or questions:
                        waiting = [t for t in tasks if t in held or t.id in questions]
                        for event in await self._hold(waiting, step, state, questions):
                            yield event
                        return
                    new_state = await self._merge(tasks, results, head, step, state)
                    new_frontier, leads = await self._route(
                        tasks, step, new_state, frontier.waiting
                    )
                    events = sorted(self.pending, key=_seq)
                    events += [
                        self._update(t.id, t.node, step + 1, results[t.id], leads[t.id])
                        for t in tasks
                    ]
                    settles = step
                if new_frontier is not None:
                    single = new_frontier.single
                    if single is not None or not (new_frontier.nodes or new_frontier.sends):
                        nxt, new_frontier = single or END, None
                step += 1
                executed += 1
                if new_frontier is None:
                    nxt_head = nxt
                    pause = nxt in before
                else:
                    # The run's node is the next superstep's first task, or the first one an
                    # interrupt holds back: what an approver is asked about.
                    next_tasks = plan(wf, new_frontier)
                    nxt_head = next_tasks[0].node
                    # One task held: pause now. Several: the next superstep runs the others
                    # first and holds only those (see above).
                    pause = len(next_tasks) == 1 and nxt_head in before
                if frontier is None:
                    ran_after = node if node in after_nodes else None
                else:
                    ran_after = next((t.node for t in tasks if t.node in after_nodes), None)
                tasks_json = None if new_frontier is None else dumps(new_frontier.to_json())
                checkpoint, chain = self._checkpoint(
                    step, nxt_head, state, new_state, tasks_json, appended
                )
                if ran_after is not None or pause:
                    new_json = dumps(new_state)
                    digest = pending_digest(self.run_id, nxt_head, step, new_json)
                    payload = {
                        "when": "before" if ran_after is None else "after",
                        "after": ran_after,
                        "digest": digest,
                        "state": loads(new_json),
                    }
                    events.append(self._event(EventType.INTERRUPTED, nxt_head, step, payload))
                    change = StepCommit(
                        _PENDING, nxt_head, step, events, checkpoint, None, digest, True, settles
                    )
                elif nxt_head == END:
                    events.append(
                        self._event(EventType.COMPLETED, END, step, {"state": json_copy(new_state)})
                    )
                    change = StepCommit(
                        _COMPLETED, END, step, events, checkpoint, release=True, settles=settles
                    )
                else:
                    change = StepCommit(
                        _RUNNING, nxt_head, step, events, checkpoint, settles=settles
                    )
                await self._commit(change, new_state, new_frontier)
                self.chain = chain
                state = new_state
                for event in events:
                    if event.type is not _NODE_START:
                        yield event
                if change.status is not _RUNNING:
                    return
                frontier, node = new_frontier, nxt_head if new_frontier is None else ""
                now = time.monotonic()
                if now - last_yield > _YIELD_EVERY:
                    last_yield = now
                    await asyncio.sleep(0)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            if not self.released:
                where = self.change.node if self.change is not None else self.start.record.node
                cancelled = self._event(
                    EventType.CANCELLED, where, step, {"reason": type(exc).__name__}
                )
                await self._stop(Status.CANCELLED, where, step, cancelled, None)
            raise

    async def _merge(
        self,
        tasks: Sequence[Task],
        results: dict[str, dict[str, Any]],
        head: str,
        step: int,
        state: dict[str, Any],
    ) -> dict[str, Any]:
        """Merge a superstep's deltas in plan order; a conflict fails the run, saving none."""
        writes = self._state_edits(tasks) + [(t.id, results[t.id]) for t in tasks]
        try:
            nodes = self.workflow.nodes
            nested = frozenset(t.id for t in tasks if nodes[t.node].subgraph is not None)
            return merge_writes(
                state,
                writes,
                self.workflow.reducers,
                run_id=self.run_id,
                step=step,
                replacing=nested,
            )
        except (ConflictingUpdate, InvalidState) as exc:
            await self._fail(head, step, exc)
            raise
        except Exception as exc:  # a custom reducer raised
            error = NodeFailed(self.run_id, head, step, exc)
            await self._fail(head, step, error)
            raise error from exc

    def _checkpoint(
        self,
        step: int,
        node: str,
        state: dict[str, Any],
        new_state: dict[str, Any],
        tasks_json: str | None,
        appended: Mapping[str, list[Any]] | None = None,
    ) -> tuple[CheckpointWrite, Chain]:
        """The step's checkpoint: the delta from ``state`` when the chain goes on (no
        encoding of the whole state), else a snapshot and the chain it starts."""
        if self.chain is not None:
            delta_json, chain = self.chain.next(state, new_state, appended)
            if delta_json is not None:
                return CheckpointWrite(step, node, "", tasks_json, delta_json, chain.last), chain
        new_json = dumps(new_state)
        return CheckpointWrite(step, node, new_json, tasks_json), Chain.after(new_json)

    def _update(
        self, task: str, node: str, step: int, delta: dict[str, Any], leads: Sequence[str]
    ) -> Event:
        payload: dict[str, Any] = {"delta": delta, "next": leads[0] if leads else END}
        if len(leads) > 1:
            payload["to"] = list(leads)
        if task != node:
            payload["task"] = task
        return self._event(_STATE_UPDATE, node, step, payload)

    async def _merge_one(
        self,
        node: str,
        step: int,
        state: dict[str, Any],
        delta: dict[str, Any],
        reduce: bool = True,
    ) -> dict[str, Any]:
        """Merge one task's delta; on any failure the run fails with its state intact."""
        try:
            return apply_delta(state, delta, self.workflow.reducers if reduce else {})
        except InvalidState as exc:
            await self._fail(node, step, exc)
            raise
        except Exception as exc:  # a custom reducer raised
            error = NodeFailed(self.run_id, node, step, exc)
            await self._fail(node, step, error)
            raise error from exc

    async def _route(
        self,
        tasks: Sequence[Task],
        step: int,
        state: dict[str, Any],
        waiting: Sequence[tuple[int, tuple[str, ...]]],
    ) -> tuple[Frontier, dict[str, list[str]]]:
        try:
            view = StateCopy(state)  # routers read it; a router's changes stay in it
            return advance(self.workflow, tasks, view, waiting, run_id=self.run_id)
        except RoutingError as exc:
            await self._fail(exc.node, step, exc)
            raise

    # -- a superstep of several tasks ------------------------------------------------------

    async def _superstep(
        self,
        tasks: Sequence[Task],
        step: int,
        state: dict[str, Any],
        results: dict[str, dict[str, Any]],
        questions: dict[str, Asked | ChildPaused],
    ) -> AsyncIterator[Event | Emitted]:
        """Run the tasks not saved yet, concurrently, saving each result as it finishes.

        A task that asks a question (``ctx.interrupt``) ends in ``questions``; the others
        go on.
        """
        saved = {w.task_id: w for w in await self.store.apending_writes(self.run_id, step)}
        self.pending = []
        for task in tasks:
            write = saved.get(task.id)
            if write is not None:  # finished before a crash: its events, renumbered
                results[task.id] = write.delta
                self.recovered.append(task.id)
                self.pending += [dataclasses.replace(e, seq=next(self._seqs)) for e in write.events]
        todo = [t for t in tasks if t.id not in saved]
        starts = {
            t.id: self._event(_NODE_START, t.node, step, {} if t.id == t.node else {"task": t.id})
            for t in todo
        }
        self.pending += starts.values()
        for event in starts.values():
            yield event
        limit = asyncio.Semaphore(self.workflow.max_concurrency)
        buffers: dict[str, list[Event]] = {t.id: [] for t in todo}
        inputs = {t.id: await self._edited(t, step, state) for t in todo}

        async def run(task: Task) -> dict[str, Any] | Asked | ChildPaused | ChildStepped:
            buffer = buffers[task.id]

            def sink(type: str, payload: dict[str, Any]) -> None:
                buffer.append(self._event(type, task.node, step, payload))

            async with limit:
                try:
                    call, given = inputs[task.id]
                    return await self._invoke(call, step, given, sink, threaded=True)
                except (Asked, ChildPaused, ChildStepped) as asked:
                    return asked

        running: dict[Any, Task] = {asyncio.ensure_future(run(t)): t for t in todo}
        try:
            while running:
                done = await self._wake(set(running))
                if self.live is not None:
                    for item in self.live.drain():
                        yield item
                for future in sorted(done, key=lambda f: self.workflow.order[running[f].node]):
                    task = running.pop(future)
                    delta = future.result()  # raises _Failure: the finally cancels the rest
                    events = buffers[task.id]
                    if isinstance(delta, ChildStepped):  # unfinished: runs on next time
                        for event in delta.events:
                            yield event
                        continue
                    if isinstance(delta, Asked | ChildPaused):  # no result: runs again later
                        questions[task.id] = delta
                        self.pending += events
                        for event in events:
                            yield event
                        continue
                    write = PendingWrite(
                        self.run_id, step, task.id, task.node, delta, events, time.time()
                    )
                    await self.store.asave_write(self.run_id, self.fence, write)
                    results[task.id] = delta
                    self.ran[task.id] = delta
                    self.pending += events
                    for event in events:
                        yield event
        except _Failure as failure:
            self.pending += [e for t in running.values() for e in buffers[t.id]]
            await self._fail(failure.node, step, failure.error)
            raise failure.error from failure.error.__cause__
        finally:
            for future in running:
                future.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _edited(
        self, task: Task, step: int, state: dict[str, Any]
    ) -> tuple[Task, dict[str, Any]]:
        """A task and its input: the superstep's state, with its approval's edit merged
        in if it was approved with one (``run.approve(task=..., update=...)``); for a
        Send, over its payload. (The node still gets a copy: see ``_invoke``.)"""
        edit = self.edits.get(task.id)
        if edit is None:
            return task, state
        given = {**state, **json_copy(task.payload or {})}
        edited = await self._merge_one(task.node, step, given, edit)
        return dataclasses.replace(task, payload=None), edited

    def _state_edits(self, tasks: Sequence[Task]) -> list[tuple[str, dict[str, Any]]]:
        """The superstep's writes from edits, in plan order: the keys that edit the state
        (a key a Send's payload carries edited that task's input only)."""
        return [
            (t.id, {k: v for k, v in self.edits[t.id].items() if k not in (t.payload or {})})
            for t in tasks
            if t.id in self.edits
        ]

    async def _wake(self, futures: set[Any]) -> set[Any]:
        """Wait for a future to finish — or, when streaming live, for a node to emit."""
        if self.live is None:
            done, _ = await asyncio.wait(futures, return_when=asyncio.FIRST_COMPLETED)
            return done
        emitted = asyncio.ensure_future(self.live.flag.wait())
        try:
            done, _ = await asyncio.wait({*futures, emitted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            emitted.cancel()
        return done - {emitted}

    # -- calling one node ------------------------------------------------------------------

    async def _invoke(
        self,
        task: Task,
        step: int,
        state: dict[str, Any],
        sink: Sink | None,
        *,
        threaded: bool = False,
    ) -> dict[str, Any]:
        """Call the task's node on a fresh copy of the state (copied as it is read: a
        :class:`~agentnb.graph.copies.StateCopy`); return its checked delta. ``sink``:
        where what the node reports goes (``None``: the step's pending events, the sink
        made only when the node can report — most nodes cannot).

        Raises:
            _Failure: carrying the typed error (NodeFailed, BreakerOpen, InvalidState).
        """
        node = task.node
        spec = self.workflow.nodes[node]
        if not threaded and task.payload is None and node in self.workflow.direct:
            # The common case, kept lean: an unguarded function on the loop's thread.
            try:
                if spec.takes_ctx:
                    if sink is None:
                        sink = self._sink(node, step)
                    emitted = self._streams(task)
                    context = NodeContext(
                        self.store, self.run_id, node, step, sink, task.id, emitted.add
                    )
                    try:
                        result = spec.fn(StateCopy(state), context)
                        if type(result) is not dict and inspect.isawaitable(result):
                            result = await result
                    finally:
                        emitted.flush(sink)
                else:
                    result = spec.fn(StateCopy(state))
                    if type(result) is not dict and inspect.isawaitable(result):
                        result = await result
            except Exception as exc:
                error = NodeFailed(self.run_id, node, step, exc)
                error.__cause__ = exc
                raise _Failure(node, error) from None
            return self._checked(node, step, result)
        if sink is None:
            sink = self._sink(node, step)
        if spec.subgraph is not None:
            try:
                return await drive_child(
                    self.workflow,
                    self.run_id,
                    task,
                    step,
                    state,
                    stepping=self.stepping,
                    approved_by=self.approvals.get(task.id) or self.approvals.get(""),
                )
            except NodeFailed as exc:
                raise _Failure(node, exc) from None
        streams: Streams | None = self._streams(task) if spec.takes_ctx else None
        ctx = (
            NodeContext(self.store, self.run_id, node, step, sink, task.id, streams.add)
            if streams is not None
            else None
        )
        payload = task.payload
        fresh: Callable[[], Any] = lambda: StateCopy(state, payload)  # noqa: E731
        fn = spec.fn
        is_async = spec.is_async
        if threaded and not is_async:
            loop = asyncio.get_running_loop()
            pool = self.workflow._threads()
            sync_fn = fn

            def fn(*args: Any) -> Any:
                return loop.run_in_executor(pool, lambda: sync_fn(*args))

            is_async = True
        try:
            if spec.guarded and (spec.timeout is not None or spec.breaker is not None):
                result = await self._guarded(spec, fn, is_async, node, fresh, ctx, sink)
            elif spec.guarded:
                # Retry only: the first attempt is a plain call; the policy takes over if it
                # fails (most calls succeed, and this keeps a retry wrapper nearly free).
                try:
                    result = fn(fresh(), ctx) if ctx else fn(fresh())
                    if type(result) is not dict and inspect.isawaitable(result):
                        result = await result
                except Exception as first:
                    result = await self._guarded(spec, fn, is_async, node, fresh, ctx, sink, first)
            else:
                result = fn(fresh(), ctx) if ctx else fn(fresh())
                if type(result) is not dict and inspect.isawaitable(result):
                    result = await result
            if result is not None and not isinstance(result, dict):
                raise TypeError(
                    f"a node returns a dict of changes or None, not {type(result).__name__}"
                )
        except BreakerOpen as exc:
            exc.run_id = self.run_id
            raise _Failure(node, exc) from None
        except Exception as exc:
            error = NodeFailed(self.run_id, node, step, exc)
            error.__cause__ = exc
            raise _Failure(node, error) from None
        finally:
            if streams is not None:
                streams.flush(sink)
        return self._checked(node, step, result)

    def _streams(self, task: Task) -> Streams:
        wf = self.workflow
        return Streams(wf.keep_streams, self.live, self.run_id, task.node, task.id, wf.emitted)

    def _checked(self, node: str, step: int, result: Any) -> dict[str, Any]:
        """The node's result as a JSON delta (a copy), or a typed failure."""
        if result is None:
            return {}
        if not isinstance(result, dict):
            error = TypeError(
                f"a node returns a dict of changes or None, not {type(result).__name__}"
            )
            failed = NodeFailed(self.run_id, node, step, error)
            failed.__cause__ = error
            raise _Failure(node, failed)
        # The common delta — a few string keys to strings, whole numbers, booleans or
        # None — is JSON as it is: a shallow copy is the copy, with no encoding. Anything
        # else (a float, a list, a subclass, a key that is not a string) takes the full
        # round trip, which names the bad key path.
        scalars = _SCALARS
        for key, value in result.items():
            if type(key) is not str or type(value) not in scalars:
                break
        else:
            return dict(result)
        try:
            delta: dict[str, Any] = loads(dumps(result, root=f"delta of {node!r}"))
            if delta != result:  # tuples became lists (fine) or keys became strings (not)
                check(result, root=f"delta of {node!r}")
        except InvalidState as exc:
            raise _Failure(node, exc) from None
        return delta

    def _sink(self, node: str, step: int) -> Sink:
        def record(type: str, payload: dict[str, Any]) -> None:
            self.pending.append(self._event(type, node, step, payload))

        return record

    async def _guarded(
        self,
        spec: NodeSpec,
        fn: Callable[..., Any],
        is_async: bool,
        node: str,
        fresh: Callable[[], Any],
        ctx: NodeContext | None,
        sink: Sink,
        failed: Exception | None = None,
    ) -> Any:
        """Call a node under its timeout, retry policy and circuit breaker."""

        def make_args() -> tuple[Any, ...]:  # a fresh copy of the state for every attempt
            return (fresh(), ctx) if ctx else (fresh(),)

        return await guarded_call(
            fn,
            make_args,
            timeout=spec.timeout,
            retry=spec.retry,
            breaker=spec.breaker,
            is_async=is_async,
            owner=self.run_id,
            name=node,
            report=sink,
            failed=failed,
        )

    # -- pauses and ends -------------------------------------------------------------------

    def _failed(self, node: str, step: int, error: BaseException) -> Event:
        # One shape for every failure event (``retry``, ``failed``): ``error`` is what went
        # wrong in the user's code; ``raised`` is the agentnb error the caller got for it.
        cause = error.error if isinstance(error, NodeFailed) else error
        payload = {"error": describe(cause), "raised": describe(error)}
        return self._event(EventType.FAILED, node, step, payload)

    async def _pause(self, node: str, step: int, state: dict[str, Any]) -> Event:
        """Pause before ``node`` with the state unchanged (entry interrupt, continued run)."""
        state_json = dumps(state)
        digest = pending_digest(self.run_id, node, step, state_json)
        event = self._event(
            EventType.INTERRUPTED,
            node,
            step,
            {"when": "before", "after": None, "digest": digest, "state": loads(state_json)},
        )
        await self._commit(
            StepCommit(Status.PENDING, node, step, [event], pending_digest=digest, release=True)
        )
        return event

    async def _hold(
        self,
        held: Sequence[Task],
        step: int,
        live: dict[str, Any],
        questions: Mapping[str, Asked | ChildPaused] | None = None,
        *,
        rows: bool = True,
    ) -> list[Event]:
        """Pause a superstep whose other tasks are done: one pending decision per task.

        A task held by an interrupt waits for an approval; one that asked a question
        (``ctx.interrupt``) waits for an answer. Without ``rows`` (a superstep of one task)
        the run as a whole is decided, as at any interrupt.
        """
        questions = questions or {}
        events = sorted(self.pending, key=_seq)
        paused: list[Event] = []
        holds = []
        state_json = dumps(live)
        state = loads(state_json)
        for task in held:
            asked = questions.get(task.id)
            payload: dict[str, Any] = {"when": "before", "after": None}
            where = task.id
            if isinstance(asked, Asked):
                payload = {"when": "input", "after": None, "question": asked.question}
                payload.update(key=asked.key, index=asked.index)
                where = asked.key
            elif asked is not None:  # inside a subgraph: decided from here
                payload = {"when": "child", "after": None, "child": asked.child}
                where = asked.child
            digest = pending_digest(self.run_id, where, step, state_json)
            holds.append((task.id, task.node, digest))
            payload.update(digest=digest, state=state)
            if rows or task.id != task.node:
                payload["task"] = task.id
            paused.append(self._event(EventType.INTERRUPTED, task.node, step, payload))
        events += paused
        change = StepCommit(
            Status.PENDING,
            held[0].node,
            step,
            events,
            pending_digest=holds[0][2],
            release=True,
            holds=holds if rows else (),
        )
        await self._commit(change)
        return paused

    async def _finish(self, state: dict[str, Any], step: int) -> Event:
        event = self._event(EventType.COMPLETED, END, step, {"state": json_copy(state)})
        await self._commit(StepCommit(Status.COMPLETED, END, step, [event], release=True))
        return event


def _seq(event: Event) -> int:
    return event.seq


def _appended(delta: Mapping[str, Any], reducers: Mapping[str, Any]) -> dict[str, list[Any]]:
    """What the ``append`` reducer adds to each of its keys in ``delta`` (a checked JSON
    delta: a list is its items, anything else one item)."""
    return {
        key: value if isinstance(value, list) else [value]
        for key, value in delta.items()
        if reducers.get(key) is append
    }
