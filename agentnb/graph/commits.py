"""Where a driven run stands, and the commits that move it: one transaction each.

:class:`Committer` is the base of the :class:`~agentnb.graph.driver.Driver`: the lease's
fence, the events of the superstep in flight, the run's live state, next tasks and chain,
and everything written in one commit — a step's checkpoint (a delta on the chain, or a
snapshot), a pause, the end, a failure or a cancellation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from agentnb._json import dumps, loads
from agentnb.errors import (
    InvalidState,
    NodeFailed,
    RecursionLimitReached,
    RoutingError,
    describe,
)
from agentnb.graph.builder import END
from agentnb.graph.copies import StateCopy
from agentnb.graph.questions import Asked
from agentnb.graph.state import apply_delta, json_copy
from agentnb.graph.streams import Live
from agentnb.graph.subgraph import ChildPaused
from agentnb.graph.superstep import Frontier, Task, advance
from agentnb.store.base import Checkpointer, CheckpointWrite, StepCommit, pending_digest
from agentnb.store.chains import Chain
from agentnb.store.records import Event, EventType, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow

__all__ = ["Committer", "Failure", "Position", "seq_of"]

_STATE_UPDATE = EventType.STATE_UPDATE


@dataclass(frozen=True, slots=True)
class Position:
    """Where a run stands: its row, its live state (never changed in place: nodes get a
    :class:`~agentnb.graph.copies.StateCopy`), its next tasks, and the stored chain its
    next checkpoint extends (``None``: unknown, so the next checkpoint is a snapshot)."""

    record: RunRecord
    state: dict[str, Any]
    frontier: Frontier
    chain: Chain | None = None


class Failure(Exception):
    """Carries the typed error of a task out of a superstep (never escapes the driver)."""

    def __init__(self, node: str, error: BaseException) -> None:
        self.node, self.error = node, error


class Committer:
    """What a driver holds for one call (its lease, the events in flight, where the run
    stands) and every commit it makes: a step, a pause, the end, a failure."""

    def __init__(self, workflow: Workflow, owner: str, position: Position) -> None:
        self.workflow = workflow
        self.store = workflow.checkpointer
        self._lease_seconds = workflow.lease_seconds
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
        # The start record's lease is this driver's already (a Worker's claim took it and
        # bumped the fence): no acquire, one write transaction less per claimed run.
        self.leased = False
        self.approvals: dict[str, str] = {}  # task id ("" for the run) -> who approved
        # Held task id -> the edit its approval carried, in the superstep in flight: that
        # task's input, and a write of the superstep (merged before the tasks' deltas).
        self.edits: dict[str, dict[str, Any]] = {}
        # Where the run stands after the last commit; ``position`` assembles it at the end.
        self.change: StepCommit | None = None
        self.state = position.state
        self.frontier: Frontier | None = position.frontier
        self.chain = position.chain
        # The store's sync commit, when awaiting its stock twin would only call it (set
        # per drive by ``_begin``; ``None``: await ``acommit``).
        self._commit_now: Callable[..., None] | None = None

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
        """Commit ``change`` (with the run's new ``state`` and ``frontier``, for a step):
        every commit of a drive goes through here."""
        if self._commit_now is not None:
            self._commit_now(self.run_id, self.fence, change, lease_seconds=self._lease_seconds)
        else:
            await self.store.acommit(
                self.run_id, self.fence, change, lease_seconds=self._lease_seconds
            )
        self.released = change.release
        self.pending = []
        self.change = change
        if state is not None:
            self.state, self.frontier = state, frontier
        if self.workflow.listeners:
            self.workflow._notify(change.events)

    async def _acquire(self, lease_seconds: float) -> RunRecord:
        """Take the run's lease. A drive cancelled meanwhile (Stop, an interrupted cell)
        does not leave it held by no one until it expires: a store call offloaded to a
        thread ends there all the same, so it is waited for, and the run it leased is
        recorded cancelled (as a drive cancelled later is) and given back."""
        acquiring = self.store.aacquire(self.run_id, self.owner, lease_seconds=lease_seconds)
        if self.store.direct():  # called on this thread: no cancellation can come between
            return await acquiring
        call = asyncio.ensure_future(acquiring)
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            try:
                record = await call
            except Exception:  # it leased nothing; the cancellation goes on
                raise asyncio.CancelledError from None
            self.fence, self._seqs = record.fence, itertools.count(record.seq + 1)
            if record.status == Status.PENDING or record.status.finished:
                await self.store.arelease(self.run_id, self.fence)
            else:
                where, step = record.node, record.step
                cancelled = self._event(
                    EventType.CANCELLED, where, step, {"reason": "CancelledError"}
                )
                await self._stop(Status.CANCELLED, where, step, cancelled, None)
            raise

    async def _stop(
        self, status: Status, node: str, step: int, event: Event, error: BaseException | None
    ) -> Event:
        """Commit a run-ending (or cancelling) change: state untouched, lease released."""
        await self._commit(
            StepCommit(
                status,
                node,
                step,
                sorted([*self.pending, event], key=seq_of),
                error=None if error is None else {**describe(error), "node": node},
                release=True,
            )
        )
        return event

    async def _past_limit(self, node: str, step: int) -> tuple[Event, RecursionLimitReached]:
        """Fail the run for passing its ``recursion_limit``: the event and the error."""
        error = RecursionLimitReached(self.run_id, self.workflow.recursion_limit or 0, node)
        failed = self._failed(node, step, error)
        return await self._stop(Status.FAILED, node, step, failed, error), error

    async def _fail(self, node: str, step: int, error: BaseException) -> None:
        await self._stop(Status.FAILED, node, step, self._failed(node, step, error), error)

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
        events = sorted(self.pending, key=seq_of)
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

    def _checkpoint(
        self,
        step: int,
        node: str,
        state: dict[str, Any],
        new_state: dict[str, Any],
        tasks_json: str | None,
        appended: Mapping[str, list[Any]] | None = None,
        changed: Mapping[str, Any] | None = None,
        changes_json: str | None = None,
    ) -> tuple[CheckpointWrite, Chain]:
        """The step's checkpoint: the delta from ``state`` when the chain goes on (no
        encoding of the whole state), else a snapshot and the chain it starts.
        ``changed``, ``changes_json``: the keys the step merged and their JSON, when known
        (see :meth:`Chain.next <agentnb.store.chains.Chain.next>`)."""
        if self.chain is not None:
            delta_json, chain = self.chain.next(
                state, new_state, appended, changed=changed, text=changes_json
            )
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
        except Exception as exc:
            await self._merge_failed(node, step, exc)

    async def _merge_failed(self, node: str, step: int, exc: Exception) -> NoReturn:
        """Fail the run for a delta that would not merge (``exc``), and raise its error."""
        if isinstance(exc, InvalidState):
            await self._fail(node, step, exc)
            raise exc
        error = NodeFailed(self.run_id, node, step, exc)  # a custom reducer raised
        await self._fail(node, step, error)
        raise error from exc

    async def _route(
        self,
        tasks: Sequence[Task],
        step: int,
        state: dict[str, Any],
        waiting: Sequence[tuple[int, tuple[str, ...]]],
        views: Mapping[str, dict[str, Any]] | None = None,
    ) -> tuple[Frontier, dict[str, list[str]]]:
        """Route a finished superstep: each task on its own view (``views``, see
        :func:`~agentnb.graph.superstep.advance`), or all on ``state``."""
        try:
            # Routers read copies; a router's changes stay in them.
            view = StateCopy(state)
            own = None if views is None else {t: StateCopy(v) for t, v in views.items()}
            return advance(self.workflow, tasks, view, waiting, run_id=self.run_id, views=own)
        except RoutingError as exc:
            await self._fail(exc.node, step, exc)
            raise


def sync_commit(store: Any) -> Callable[..., None] | None:
    """``store.commit`` when awaiting ``store.acommit`` would just call it on this thread
    (the stock twin, a store that calls directly now): the step's commit then costs no
    two coroutines (``acommit``, ``offload``) — two of the five a linear step no longer
    makes, which together took an in-memory step from 130.7k to 120.8k instructions
    (bench/bench_instructions.py). A store with an ``acommit`` of its own is always
    awaited."""
    if type(store).acommit is Checkpointer.acommit and store.direct():
        return store.commit  # type: ignore[no-any-return]
    return None


def seq_of(event: Event) -> int:
    return event.seq
