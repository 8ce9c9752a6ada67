"""The loop that executes supersteps: one lease, one transaction per superstep.

Each turn of :meth:`Driver.drive`'s loop is five named steps, read top to bottom:

1. :meth:`~Driver._plan` — the superstep's tasks (:func:`~agentnb.graph.superstep.plan`
   on the last checkpoint's frontier) and the interrupt that gates it; in a parallel
   superstep an interrupt gates, :meth:`~Driver._hold_back` reads the tasks it holds;
2. :meth:`~Driver._gate` — whether it may run: the end, the step budgets, a stopping
   worker, a pause before it (:meth:`~Driver._stop_before` commits the stop);
3. :meth:`~Driver._run_tasks` — its tasks: one (a linear run) called on the event loop;
   several concurrently, each finished task's result saved on its own (a *pending write*,
   see :class:`~agentnb.graph.fanout.Fanout`), so a crash re-runs only the unfinished ones;
4. :meth:`~Driver._merge_step` — the deltas merged in task order through the reducers,
   the new state routed to the next frontier;
5. :meth:`~Driver._commit_step` — checkpoint and events committed together, with a pause
   (interrupt) or the end folded into that same commit.

The driver never writes the :class:`~agentnb.graph.run.Run`'s fields: it ends with a
:class:`Position` the run adopts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentnb._json import dumps, loads
from agentnb.errors import StepBudgetExhausted
from agentnb.graph.builder import END
from agentnb.graph.commits import Failure, Position, seq_of, sync_commit
from agentnb.graph.fanout import Fanout
from agentnb.graph.questions import Asked
from agentnb.graph.state import apply_delta, json_copy
from agentnb.graph.streams import Emitted
from agentnb.graph.subgraph import ChildPaused, ChildStepped
from agentnb.graph.superstep import Frontier, Task, legacy_frontier, plan, supersteps_allowed
from agentnb.store.base import StepCommit, pending_digest
from agentnb.store.records import Event, EventType, RunRecord, Status

__all__ = ["Driver", "Position"]

_YIELD_EVERY = 0.005
"""Seconds between forced trips to the event loop, so cancellation lands even when every
node is synchronous (and other tasks, like a widget's, keep running)."""

_RUNNING, _PENDING, _COMPLETED = Status.RUNNING, Status.PENDING, Status.COMPLETED
_NODE_START = EventType.NODE_START
_NONE: Mapping[str, Any] = {}  # no reducers: a subgraph's keys are merged already


@dataclass(slots=True)
class _Cursor:
    """Where the loop stands between supersteps: the step, the next node of a linear run
    (``frontier`` None) or the whole frontier, and what this drive has done."""

    step: int
    node: str
    frontier: Frontier | None
    approved: bool  # the run was approved: the gate before the next superstep is open
    allowed: int | None  # supersteps this invocation may run (``recursion_limit``)
    executed: int = 0
    last_yield: float = 0.0


@dataclass(slots=True)
class _Superstep:
    """One superstep in flight: its tasks, the interrupt gating it, the tasks an
    interrupt holds, and the results of the tasks run (task id -> delta)."""

    tasks: tuple[Task, ...]
    gated: str | None
    results: dict[str, dict[str, Any]]  # (given: a default_factory costs a call per step)
    held: Sequence[Task] = ()
    done: bool = False  # every task has its result: merge and commit

    @property
    def head(self) -> str:
        return self.tasks[0].node if self.tasks else END


@dataclass(slots=True)
class _Stop:
    """The gate's answer when the superstep may not run: an event to hand on, an error
    to raise after it."""

    event: Event | None = None
    error: BaseException | None = None


@dataclass(slots=True)
class _Merged:
    """A merged superstep: the new state, the next frontier (``None``: the next ``node``
    of a linear run), its events, and what the checkpoint can reuse."""

    state: dict[str, Any]
    node: str
    frontier: Frontier | None
    events: list[Event]
    appended: dict[str, list[Any]] | None = None  # tails the append reducer added
    changed: Mapping[str, Any] | None = None  # a linear step's delta: what changed
    changes_json: str | None = None  # its JSON, when each key merely replaces
    settles: int | None = None  # the superstep whose pending writes this commit merges


class Driver(Fanout):
    """Drives one run for the duration of one call, from ``position`` on."""

    async def drive(self, max_supersteps: int | None) -> AsyncIterator[Event | Emitted]:
        """Drive up to ``max_supersteps`` (``None``: to the next pause or the end),
        superstep by superstep, handing on every event (and, when streaming live, what
        nodes emit) as it happens. (One generator: every event passes through one level.)"""
        record = await self._begin(max_supersteps)
        kept = False
        try:
            if record is None:
                return
            cursor = await self._cursor(record)
            try:
                while True:
                    superstep = self._plan(cursor)
                    if superstep.gated is not None and len(superstep.tasks) > 1:
                        await self._hold_back(cursor, superstep)
                    reason = self._gate(cursor, superstep, record, max_supersteps)
                    if reason is not None:
                        stop = await self._stop_before(reason, cursor, superstep, record)
                        if stop.event is not None:
                            yield stop.event
                        if stop.error is not None:
                            raise stop.error
                        return
                    if cursor.frontier is None and self.live is None:
                        # A linear step: no generator of its own (see _run_one).
                        yield self._started(superstep, cursor.step)
                        for event in await self._run_one(superstep, cursor.step):
                            yield event
                    else:
                        async for item in self._run_tasks(cursor, superstep):
                            yield item
                    if not superstep.done:  # paused, or a subgraph advanced one superstep
                        return
                    merged = await self._merge_step(cursor, superstep)
                    change = await self._commit_step(cursor, superstep, merged)
                    for event in merged.events:
                        if event.type is not _NODE_START:  # (handed on as each task began)
                            yield event
                    if change.status is not _RUNNING:
                        return
                    if _breathe(cursor):
                        await asyncio.sleep(0)
            except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                await self._cancelled(cursor, exc)
                raise
        except Exception:
            # A worker's drive (``leased``) that raised without committing keeps its lease
            # for the worker, which drives the run again on it or gives it back: released
            # here, a run whose first step never committed is queued (or approved) and
            # free, and any claim, the worker's own loop's too, runs its node once more.
            kept = self.leased
            raise
        finally:
            if not kept:
                await self._end()

    async def _begin(self, max_supersteps: int | None) -> RunRecord | None:
        """Take the run's lease and catch up with its row; ``None`` if nothing can run (the
        lease, taken anyway, is given back by :meth:`_end`)."""
        if self.leased:
            record = self.start.record
        else:
            record = await self._acquire(self.workflow.lease_seconds)
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
        self._commit_now = sync_commit(self.store)
        self.stepping = max_supersteps == 1
        if record.status == Status.PENDING or record.status.finished:
            return None
        return record

    async def _end(self) -> None:
        if not self.released:
            await self.store.arelease(self.run_id, self.fence)

    async def _cancelled(self, cursor: _Cursor, exc: BaseException) -> None:
        """Record the drive cancelled (or interrupted) between or inside a superstep, unless
        the run's lease is given back already."""
        if not self.released:
            where = self.change.node if self.change is not None else self.start.record.node
            cancelled = self._event(
                EventType.CANCELLED, where, cursor.step, {"reason": type(exc).__name__}
            )
            await self._stop(Status.CANCELLED, where, cursor.step, cancelled, None)

    async def _cursor(self, record: RunRecord) -> _Cursor:
        """Where the drive starts: the run's row and its frontier (one stored before
        LangGraph's semantics migrated), and the approvals it carries down to subgraphs."""
        wf = self.workflow
        approved = record.status == Status.APPROVED
        if wf.nested and approved and record.decided_by:
            # A decision taken on this run (the CLI, a panel) about a pause inside one of
            # its subgraphs is passed down to the subgraph's run (see drive_child).
            self.approvals = {"": record.decided_by}
            for row in await self.store.apending_tasks(self.run_id):
                if row.status == "approved" and row.decided_by:
                    self.approvals[row.task_id] = row.decided_by
        node, frontier = _linear(self.frontier, record.node)
        if frontier is not None and frontier.semantics == 0:
            frontier = legacy_frontier(wf, frontier, self.state, self.run_id, record.step)
        allowed = supersteps_allowed(wf.recursion_limit, record.step == 0 and not approved)
        return _Cursor(record.step, node, frontier, approved, allowed, 0, time.monotonic())

    def _plan(self, cursor: _Cursor) -> _Superstep:
        """The next superstep: its tasks in merge order and the interrupt before it."""
        wf = self.workflow
        if self.edits:
            self.edits = {}
        if cursor.frontier is None:
            node = cursor.node
            alone: tuple[Task, ...] = () if node == END else wf._plain_tasks[node]
            return _Superstep(alone, node if node in wf.interrupts_before else None, {})
        tasks = plan(wf, cursor.frontier)
        gated = next((t.node for t in tasks if t.node in wf.interrupts_before), None)
        return _Superstep(tasks, gated, {})

    async def _hold_back(self, cursor: _Cursor, superstep: _Superstep) -> None:
        """In a parallel superstep an interrupt gates: the tasks interrupts hold (the
        others run meanwhile; each held task is approved on its own, its row in the store
        says whether), and the edits their approvals carry."""
        before = self.workflow.interrupts_before
        rows = [p for p in await self.store.apending_tasks(self.run_id) if p.step == cursor.step]
        superstep.gated = None
        if cursor.approved and not rows:
            # The run was approved at a pause of its own (after the superstep before): as
            # in LangGraph, that pause was this superstep's, which runs whole.
            return
        decided = [p for p in rows if p.status == "approved"]
        approved_ids = {p.task_id for p in decided}
        self.edits = {p.task_id: p.update for p in decided if p.update is not None}
        held = [t for t in superstep.tasks if t.node in before and t.id not in approved_ids]
        superstep.held = held

    def _gate(
        self,
        cursor: _Cursor,
        superstep: _Superstep,
        record: RunRecord,
        max_supersteps: int | None,
    ) -> str | None:
        """Whether the superstep may run (``None``), or why the drive stops before it:
        the run is past its ``recursion_limit``, at its end, done with this call's
        supersteps, asked to halt, out of ``max_steps``, or paused by an interrupt."""
        if cursor.allowed is not None and cursor.executed > cursor.allowed:
            return "limit"
        if not superstep.tasks:
            return "end"
        if max_supersteps is not None and cursor.executed >= max_supersteps:
            return "done"
        # A stopping Worker's runs end between supersteps — but each runs the one it was
        # claimed for first: a run a worker holds is a step in flight, so a SIGTERM just
        # after a claim still hands the next worker a step done.
        if cursor.executed and self.halt is not None and self.halt():
            return "done"
        if cursor.step >= record.max_steps:
            return "budget"
        if superstep.gated is not None and not cursor.approved:
            return "pause"
        cursor.approved = False
        return None

    async def _stop_before(
        self, reason: str, cursor: _Cursor, superstep: _Superstep, record: RunRecord
    ) -> _Stop:
        """Stop the drive before the superstep for the gate's ``reason``: commit what
        that stop records (a failure, the end, a pause) and say what to hand on."""
        step, head = cursor.step, superstep.head
        if reason == "limit":
            failed, limit = await self._past_limit(head, step)
            return _Stop(failed, limit)
        if reason == "end":
            return _Stop(await self._finish(self.state, step))
        if reason == "budget":
            budget = StepBudgetExhausted(self.run_id, record.max_steps, head)
            failed = self._failed(head, step, budget)
            return _Stop(await self._stop(Status.FAILED, head, step, failed, budget), budget)
        if reason == "pause":
            assert superstep.gated is not None
            return _Stop(await self._pause(superstep.gated, step, self.state))
        return _Stop()

    async def _run_tasks(
        self, cursor: _Cursor, superstep: _Superstep
    ) -> AsyncIterator[Event | Emitted]:
        """Run the superstep's tasks, handing on their events (and, streaming live, what
        nodes emit) as they happen; it is ``done`` when every task has its result (else
        it paused, and said so)."""
        step = cursor.step
        if cursor.frontier is None:  # a linear step, streamed live
            assert self.live is not None
            yield self._started(superstep, step)
            running = asyncio.ensure_future(self._run_one(superstep, step))
            while True:
                await self._wake({running})
                for item in self.live.drain():
                    yield item
                if running.done():
                    break
            for event in running.result():
                yield event
            return
        tasks, held, results = superstep.tasks, superstep.held, superstep.results
        questions: dict[str, Asked | ChildPaused] = {}
        runnable = [t for t in tasks if t not in held] if held else tasks
        async for out in self._superstep(runnable, step, self.state, results, questions):
            yield out
        if len(results) + len(held) + len(questions) < len(tasks):
            return  # a subgraph advanced one superstep of its own: not done
        if held or questions:
            waiting = [t for t in tasks if t in held or t.id in questions]
            for event in await self._hold(waiting, step, self.state, questions):
                yield event
            return
        superstep.done = True

    def _started(self, superstep: _Superstep, step: int) -> Event:
        """The start event of a linear step's one task: the first of its step's events."""
        start = self._event(_NODE_START, superstep.tasks[0].node, step, {})
        self.pending = [start]
        return start

    async def _run_one(self, superstep: _Superstep, step: int) -> list[Event]:
        """Run a linear step's one task on the event loop; return the events to hand on
        when it paused instead (a question or a subgraph's pause holds the run as a
        whole; a subgraph that advanced one superstep of its own hands on its events)."""
        task = superstep.tasks[0]
        node = task.node
        try:
            delta = await self._invoke(task, step, self.state, None)
        except Failure as failure:
            await self._fail(node, step, failure.error)
            raise failure.error from failure.error.__cause__
        except (Asked, ChildPaused) as asked:
            return await self._hold([task], step, self.state, {node: asked}, rows=False)
        except ChildStepped as stepped:  # the parent's step is the child's
            return stepped.events
        self.ran[node] = delta
        superstep.results[node] = delta
        superstep.done = True
        return []

    async def _merge_step(self, cursor: _Cursor, superstep: _Superstep) -> _Merged:
        """Merge the superstep's deltas through the reducers (in task order) and route the
        new state: the next node or frontier, and the step's events."""
        wf, step, state, tasks = self.workflow, cursor.step, self.state, superstep.tasks
        if cursor.frontier is not None:
            results = superstep.results
            new_state, views = await self._merge(tasks, results, superstep.head, step, state)
            frontier, leads = await self._route(
                tasks, step, new_state, cursor.frontier.waiting, views
            )
            events = sorted(self.pending, key=seq_of)
            events += [
                self._update(t.id, t.node, step + 1, results[t.id], leads[t.id]) for t in tasks
            ]
            node, next_frontier = _linear(frontier, "")
            return _Merged(new_state, node, next_frontier, events, settles=step)
        node = tasks[0].node
        delta = superstep.results[node]
        merging = _NONE if node in wf.nested else wf.reducers  # a subgraph's: merged
        appends = wf._appends
        appended = _appended(delta, appends) if merging and not appends.isdisjoint(delta) else None
        try:
            new_state = apply_delta(state, delta, merging)
        except Exception as exc:
            await self._merge_failed(node, step, exc)
        simple = wf._simple_next.get(node)
        if simple is None:
            frontier, leads = await self._route(tasks, step, new_state, ())
            lead = leads[node]
            nxt, next_frontier = _linear(frontier, "")
        else:
            lead, nxt, next_frontier = [simple], simple, None
        events = self.pending
        events.append(self._update(node, node, step + 1, delta, lead))
        # Every key replaced: new_state holds the delta's very values, so the delta's text
        # is the checkpoint's too (Chain.next), encoded once.
        replaces = not merging or merging.keys().isdisjoint(delta)
        changes_json = dumps(delta) if replaces and self.chain is not None else None
        return _Merged(new_state, nxt, next_frontier, events, appended, delta, changes_json)

    async def _commit_step(
        self, cursor: _Cursor, superstep: _Superstep, merged: _Merged
    ) -> StepCommit:
        """Commit the merged superstep — checkpoint and events, with a pause (before the
        next superstep, or after this one's node) or the end folded in — and move the
        cursor on."""
        step = cursor.step + 1
        cursor.executed += 1
        node, after, pause, ends = self._landing(cursor, superstep, merged)
        tasks_json = None if merged.frontier is None else dumps(merged.frontier.to_json())
        checkpoint, chain = self._checkpoint(
            step,
            node,
            self.state,
            merged.state,
            tasks_json,
            merged.appended,
            merged.changed,
            merged.changes_json,
        )
        events, settles = merged.events, merged.settles
        if after is not None or pause:
            new_json = dumps(merged.state)
            digest = pending_digest(self.run_id, node, step, new_json)
            payload = {
                "when": "before" if after is None else "after",
                "after": after,
                "digest": digest,
                "state": loads(new_json),
            }
            events.append(self._event(EventType.INTERRUPTED, node, step, payload))
            change = StepCommit(
                _PENDING, node, step, events, checkpoint, None, digest, True, settles
            )
        elif ends:
            final = {"state": json_copy(merged.state)}
            events.append(self._event(EventType.COMPLETED, END, step, final))
            change = StepCommit(
                _COMPLETED, END, step, events, checkpoint, release=True, settles=settles
            )
        else:
            change = StepCommit(_RUNNING, node, step, events, checkpoint, settles=settles)
        await self._commit(change, merged.state, merged.frontier)
        self.chain = chain
        cursor.step, cursor.frontier = step, merged.frontier
        cursor.node = node if merged.frontier is None else ""
        return change

    def _landing(
        self, cursor: _Cursor, superstep: _Superstep, merged: _Merged
    ) -> tuple[str, str | None, bool, bool]:
        """Where a merged superstep leaves the run: the node it stands at, the node of an
        interrupt after it (``None``: none), whether it pauses before the next superstep,
        and whether the run ends."""
        wf = self.workflow
        node, pause = merged.node, merged.node in wf.interrupts_before
        if merged.frontier is not None:
            # The run's node is the next superstep's first task, or the first one an
            # interrupt holds back: what an approver is asked about. One task held: pause
            # now; several: the next superstep runs the others first, holds only those.
            next_tasks = plan(wf, merged.frontier)
            node = next_tasks[0].node
            pause = len(next_tasks) == 1 and node in wf.interrupts_before
        # Past the recursion limit, LangGraph's next tick fails first: no pause before it,
        # no end folded in. An interrupt after a node of this superstep comes before that
        # tick (LangGraph's after_tick): it pauses — or, when nothing is next, the run ends.
        after_nodes = wf.interrupts_after
        after = None
        if after_nodes:  # (most graphs have none: no search, no generator)
            after = next((t.node for t in superstep.tasks if t.node in after_nodes), None)
        over = cursor.allowed is not None and cursor.executed > cursor.allowed
        ends = node == END and (not over or after is not None)
        if node == END:
            after = None
        return node, after, pause and not over, ends


def _breathe(cursor: _Cursor) -> bool:
    """Whether it is time to visit the event loop (every ``_YIELD_EVERY`` seconds)."""
    now = time.monotonic()
    if now - cursor.last_yield > _YIELD_EVERY:
        cursor.last_yield = now
        return True
    return False


def _linear(frontier: Frontier | None, node: str) -> tuple[str, Frontier | None]:
    """A frontier of one plain task (or none) as a linear run keeps it: just its next
    node (``END`` when nothing is next), the frontier ``None``; any other frontier — a
    fan-out, Sends, joins waiting — as it is."""
    if frontier is None:
        return node or END, None
    single = frontier.single
    if single is not None or not (frontier.nodes or frontier.sends):
        return single or END, None
    return "", frontier


def _appended(delta: Mapping[str, Any], appends: frozenset[str]) -> dict[str, list[Any]]:
    """What the ``append`` reducer adds to each of its keys (``appends``) in ``delta`` (a
    checked JSON delta: a list is its items, anything else one item)."""
    return {
        key: value if isinstance(value, list) else [value]
        for key, value in delta.items()
        if key in appends
    }
