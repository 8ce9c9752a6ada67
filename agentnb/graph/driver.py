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
import itertools
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from time import time_ns
from typing import Any

from agentnb._json import dumps, loads, quote
from agentnb.errors import StepBudgetExhausted
from agentnb.graph.builder import END
from agentnb.graph.commits import Failure, Position, seq_of
from agentnb.graph.fanout import Fanout
from agentnb.graph.questions import Asked
from agentnb.graph.state import apply_delta, json_copy
from agentnb.graph.streams import Emitted
from agentnb.graph.subgraph import ChildPaused, ChildStepped
from agentnb.graph.superstep import Frontier, Task, legacy_frontier, plan, supersteps_allowed
from agentnb.store.base import StepCommit, pending_digest
from agentnb.store.records import NS, Event, EventType, RunRecord, Status, packed_event

__all__ = ["Driver", "Position"]

_YIELD_EVERY = 0.005
"""Seconds between forced trips to the event loop, so cancellation lands even when every
node is synchronous (and other tasks, like a widget's, keep running)."""

_RUNNING, _PENDING, _COMPLETED = Status.RUNNING, Status.PENDING, Status.COMPLETED
_NODE_START, _STATE_UPDATE = EventType.NODE_START, EventType.STATE_UPDATE
_START_JSON, _UPDATE_JSON = quote(_NODE_START), quote(_STATE_UPDATE)
_NONE: Mapping[str, Any] = {}  # no reducers: a subgraph's keys are merged already


class Driver(Fanout):
    """Drives one run for the duration of one call, from ``position`` on."""

    async def drive(self, max_supersteps: int | None) -> AsyncIterator[Event | Emitted]:
        """Drive up to ``max_supersteps`` (``None``: to the next pause or the end), handing
        on every event (and, when streaming live, what nodes emit) as it happens."""
        record = await self._begin(max_supersteps)
        try:
            if record is not None:
                async for event in self._loop(record, max_supersteps):
                    yield event
        finally:
            await self._end()

    async def run_through(
        self, max_supersteps: int | None, events: list[Event] | None = None
    ) -> None:
        """:meth:`drive` for a caller that reads nothing as it happens (``run.run()``,
        ``run.step()``): one async generator less for every event to pass. The events go
        to ``events`` when given."""
        record = await self._begin(max_supersteps)
        try:
            if record is None:
                return
            if events is None:
                async for _ in self._loop(record, max_supersteps, quiet=True):
                    pass
            else:
                async for event in self._loop(record, max_supersteps):
                    if isinstance(event, Event):
                        events.append(event)
        finally:
            await self._end()

    async def _begin(self, max_supersteps: int | None) -> RunRecord | None:
        """Take the run's lease and catch up with its row; ``None`` if nothing can run (the
        lease, taken anyway, is given back by :meth:`_end`)."""
        wf = self.workflow
        if self.leased:
            record = self.start.record
        else:
            record = await self._acquire(wf.lease_seconds)
        self.fence = record.fence
        # A one-run sync call (or a store that never blocks) for the whole drive: its
        # commits are called right here (see Committer._commit).
        self._commit_here = self._stock_acommit and self.store.direct()
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
        if record.status == Status.PENDING or record.status.finished:
            return None
        return record

    async def _end(self) -> None:
        if not self.released:
            await self.store.arelease(self.run_id, self.fence)

    async def _loop(
        self, record: RunRecord, max_supersteps: int | None, *, quiet: bool = False
    ) -> AsyncIterator[Event | Emitted]:
        """Drive the run, handing on its events as they happen — but not each step's own
        when ``quiet`` (nobody reads them: two trips through the generator less a step)."""
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
        reducers, appends, plain_fns = wf.reducers, wf.appends, wf.plain_fns
        run_id, seqs, packs = self.run_id, self._seqs, self.store.packs_events
        allowed = supersteps_allowed(wf.recursion_limit, record.step == 0 and not approved)
        if frontier is not None and frontier.semantics == 0:
            frontier = legacy_frontier(wf, frontier, state, run_id, step)
        executed = 0
        last_yield = time.monotonic()
        try:
            while True:
                if frontier is None:
                    tasks: tuple[Task, ...] = () if node == END else wf.plain[node]
                    gated = node if node in before else None
                else:
                    tasks = plan(wf, frontier)
                    gated = next((t.node for t in tasks if t.node in before), None)
                held: Sequence[Task] = ()
                if self.edits:
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
                if allowed is not None and executed > allowed:
                    failed, limit = await self._past_limit(tasks[0].node if tasks else END, step)
                    yield failed
                    raise limit
                head = tasks[0].node if tasks else END
                if not tasks:
                    yield await self._finish(state, step)
                    return
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
                packed: str | None = None  # the events as the store packs them, if made
                appended: dict[str, list[Any]] | None = None  # tails the append reducer added
                changed: Mapping[str, Any] | None = None  # a linear step's delta: what changed
                changes_json: str | None = None  # its JSON, when each key merely replaces
                settles: int | None = None
                if frontier is None:
                    # A store that packs events gets their times as integers too (see
                    # _packed); the others, the float alone.
                    start_ns = time_ns() if packs else 0
                    at = start_ns / NS if packs else time.time()
                    start = Event(run_id, next(seqs), step, _NODE_START, node, {}, at)
                    self.pending = [start]
                    if not quiet:
                        yield start
                    try:
                        fn = plain_fns.get(node) if self.live is None else None
                        if fn is not None:  # no coroutine for a plain function
                            delta = self._plain(fn, node, step, state)
                            if type(delta) is not dict:
                                delta = await delta
                        elif self.live is None:
                            delta = await self._invoke(tasks[0], step, state, None)
                        else:  # hand on what the node emits while it runs
                            running = asyncio.ensure_future(
                                self._invoke(tasks[0], step, state, None)
                            )
                            while True:
                                await self._wake({running})
                                for item in self.live.drain():
                                    yield item
                                if running.done():
                                    break
                            delta = running.result()
                    except Failure as failure:
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
                    merging = _NONE if node in wf.nested else reducers  # a subgraph's: merged
                    if merging and appends and not appends.isdisjoint(delta):
                        appended = _appended(delta, appends)
                    try:
                        new_state = apply_delta(state, delta, merging)
                    except Exception as exc:
                        await self._merge_failed(node, step, exc)
                    changed = delta
                    simple = wf.simple_next.get(node)
                    if simple is None:
                        new_frontier, leads = await self._route(tasks, step, new_state, ())
                        events = self.pending
                        events.append(self._update(node, node, step + 1, delta, leads[node]))
                    else:
                        nxt, events = simple, self.pending
                        update_ns = time_ns() if packs else 0
                        update = Event(
                            run_id,
                            next(seqs),
                            step + 1,
                            _STATE_UPDATE,
                            node,
                            {"delta": delta, "next": simple},
                            update_ns / NS if packs else time.time(),
                        )
                        events.append(update)
                        if packs and len(events) == 2:  # the node reported nothing
                            delta_json = dumps(delta)
                            packed = _packed(start, start_ns, update, update_ns, delta_json, simple)
                            if not merging or merging.keys().isdisjoint(delta):
                                # every key replaced: new_state holds the delta's very
                                # values, its text is the checkpoint's too (Chain.next)
                                changes_json = delta_json
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
                    new_state, views = await self._merge(tasks, results, head, step, state)
                    new_frontier, leads = await self._route(
                        tasks, step, new_state, frontier.waiting, views
                    )
                    events = sorted(self.pending, key=seq_of)
                    events += [
                        self._update(t.id, t.node, step + 1, results[t.id], leads[t.id])
                        for t in tasks
                    ]
                    settles = step
                if new_frontier is not None:
                    single = new_frontier.single
                    if single is not None or not (new_frontier.nodes or new_frontier.sends):
                        nxt, new_frontier = single or END, None
                step, executed = step + 1, executed + 1
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
                over = allowed is not None and executed > allowed
                if over:  # LangGraph's next tick fails first: no pause, no end folded in
                    ran_after, pause = None, False
                tasks_json = None if new_frontier is None else dumps(new_frontier.to_json())
                checkpoint, chain = self._checkpoint(
                    step, nxt_head, state, new_state, tasks_json, appended, changed, changes_json
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
                elif nxt_head == END and not over:
                    events.append(
                        self._event(EventType.COMPLETED, END, step, {"state": json_copy(new_state)})
                    )
                    change = StepCommit(
                        _COMPLETED, END, step, events, checkpoint, release=True, settles=settles
                    )
                else:
                    # (no error, no digest, no release, no holds)
                    change = StepCommit(
                        _RUNNING, nxt_head, step, events, checkpoint, None, None, False,
                        settles, (), packed,
                    )  # fmt: skip
                if not self._commit_now(change, new_state, new_frontier):
                    await self._commit(change, new_state, new_frontier)
                self.chain = chain
                state = new_state
                if not quiet:
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


def _packed(
    start: Event, start_ns: int, update: Event, update_ns: int, delta_json: str, simple: str
) -> str:
    """A linear step's two events as the store packs them, from the delta encoded once
    (``delta_json``) and their times as integers (no float to format): what ``pack``
    would write."""
    where = quote(update.node or "")  # (a node's events always name it)
    payload = f'{{"delta":{delta_json},"next":{quote(simple)}}}'
    return (
        f"[{packed_event(start.seq, start.step, _START_JSON, where, '{}', start_ns)},"
        f"{packed_event(update.seq, update.step, _UPDATE_JSON, where, payload, update_ns)}]"
    )


def _appended(delta: Mapping[str, Any], appends: frozenset[str]) -> dict[str, list[Any]]:
    """What the ``append`` reducer adds to each of its keys (``appends``) in ``delta`` (a
    checked JSON delta: a list is its items, anything else one item)."""
    return {
        key: value if isinstance(value, list) else [value]
        for key, value in delta.items()
        if key in appends
    }
