"""The loop that executes nodes: one lease, one transaction per step, events as they happen.

For each node: emit ``node_start``, call the node on a fresh copy of the state, check the
delta is JSON, merge it, route, then write checkpoint + events + run row in one commit and
emit the rest. A pause (interrupt) or the end is folded into the same commit as the step
that reaches it, so a durable step costs one transaction.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from agentnb._json import check, dumps, loads
from agentnb.errors import (
    InvalidState,
    NodeFailed,
    RoutingError,
    StepBudgetExhausted,
    describe,
)
from agentnb.graph.builder import END
from agentnb.graph.state import apply_delta
from agentnb.store.base import CheckpointWrite, StepCommit, pending_digest
from agentnb.store.records import Event, EventType, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.graph.run import Run

__all__ = ["Driver"]


class Driver:
    """Drives one :class:`~agentnb.graph.run.Run` for the duration of one call."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.workflow = run.workflow
        self.store = run.workflow.checkpointer
        self.run_id = run.run_id
        self.fence = 0
        self.seq = 0
        self.released = False
        self.pending: list[Event] = []  # events of the step in flight, not yet committed

    def _event(self, type: str, node: str | None, step: int, payload: dict[str, Any]) -> Event:
        self.seq += 1
        return Event(self.run_id, self.seq, step, type, node, payload, time.time())

    def _commit(self, change: StepCommit) -> RunRecord:
        record = self.store.commit(
            self.run_id, self.fence, change, lease_seconds=self.workflow.lease_seconds
        )
        self.released = change.release
        self.pending = []
        self.run._record = record
        return record

    def _stop(
        self, status: Status, node: str, step: int, event: Event, error: BaseException | None
    ) -> Event:
        """Commit a run-ending (or cancelling) change: state untouched, lease released."""
        self._commit(
            StepCommit(
                status,
                node,
                step,
                [*self.pending, event],
                error=None if error is None else {**describe(error), "node": node},
                release=True,
            )
        )
        return event

    async def drive(self, max_nodes: int | None) -> AsyncIterator[Event]:
        run, wf = self.run, self.workflow
        record = self.store.acquire(self.run_id, run.owner, lease_seconds=wf.lease_seconds)
        self.fence = record.fence
        run._sync(record)
        try:
            if record.status == Status.PENDING or record.status.finished:
                return
            async for event in self._loop(record, max_nodes):
                yield event
        finally:
            if not self.released:
                self.store.release(self.run_id, self.fence)

    async def _loop(self, record: RunRecord, max_nodes: int | None) -> AsyncIterator[Event]:
        run, wf = self.run, self.workflow
        self.seq = record.seq
        node, step = record.node, record.step
        approved = record.status == Status.APPROVED
        state, state_json = run._state, run._state_json
        executed = 0
        try:
            while True:
                if node == END:
                    yield self._finish(state, state_json, step)
                    return
                if max_nodes is not None and executed >= max_nodes:
                    return
                if step >= record.max_steps:
                    error = StepBudgetExhausted(self.run_id, record.max_steps, node)
                    yield self._stop(
                        Status.FAILED, node, step, self._failed(node, step, error), error
                    )
                    raise error
                if node in wf.interrupts_before and not approved:
                    yield self._pause(node, "before", None, step, state_json)
                    return
                approved = False

                start = self._event(EventType.NODE_START, node, step, {})
                self.pending = [start]
                yield start
                delta, custom = await self._call(node, step, state_json)
                new_state, new_json, nxt = self._advance(node, step, state, delta)

                step += 1
                executed += 1
                update = self._event(
                    EventType.STATE_UPDATE, node, step, {"delta": delta, "next": nxt}
                )
                self.pending.extend(custom)
                self.pending.append(update)
                after = node in wf.interrupts_after
                if after or (nxt in wf.interrupts_before):
                    digest = pending_digest(self.run_id, nxt, step, new_json)
                    paused = self._event(
                        EventType.INTERRUPTED,
                        nxt,
                        step,
                        {
                            "when": "after" if after else "before",
                            "after": node if after else None,
                            "digest": digest,
                            "state": loads(new_json),
                        },
                    )
                    change = StepCommit(
                        Status.PENDING,
                        nxt,
                        step,
                        [*self.pending, paused],
                        CheckpointWrite(step, nxt, new_json),
                        pending_digest=digest,
                        release=True,
                    )
                elif nxt == END:
                    done = self._event(EventType.COMPLETED, END, step, {"state": loads(new_json)})
                    change = StepCommit(
                        Status.COMPLETED,
                        END,
                        step,
                        [*self.pending, done],
                        CheckpointWrite(step, END, new_json),
                        release=True,
                    )
                else:
                    change = StepCommit(
                        Status.RUNNING,
                        nxt,
                        step,
                        list(self.pending),
                        CheckpointWrite(step, nxt, new_json),
                    )
                committed = change.events
                ends = change.status != Status.RUNNING
                self._commit(change)
                state, state_json = new_state, new_json
                run._state, run._state_json = new_state, new_json
                for event in committed[1:]:
                    yield event
                if ends:
                    return
                node = nxt
                # A cancellation point between nodes, so a cancelled run stops at a boundary
                # even when its nodes are all synchronous.
                await asyncio.sleep(0)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            if not self.released:
                cancelled = self._event(
                    EventType.CANCELLED, node, step, {"reason": type(exc).__name__}
                )
                self._stop(Status.CANCELLED, node, step, cancelled, None)
            raise

    async def _call(
        self, node: str, step: int, state_json: str
    ) -> tuple[dict[str, Any], list[Event]]:
        """Run the node on a fresh copy of the state; return its checked delta."""
        from agentnb.graph.run import NodeContext

        spec = self.workflow.nodes[node]
        ctx = NodeContext(self.run, node, step)
        try:
            arg = loads(state_json)
            result = spec.fn(arg, ctx) if spec.takes_ctx else spec.fn(arg)
            if inspect.isawaitable(result):
                result = await result
            if result is None:
                result = {}
            elif not isinstance(result, dict):
                raise TypeError(
                    f"a node returns a dict of changes or None, not {type(result).__name__}"
                )
        except Exception as exc:
            error = NodeFailed(self.run_id, node, step, exc)
            self._stop(Status.FAILED, node, step, self._failed(node, step, error), error)
            raise error from exc
        try:
            check(result, root=f"delta of {node!r}")
            delta: dict[str, Any] = loads(dumps(result))
        except InvalidState as exc:
            self._stop(Status.FAILED, node, step, self._failed(node, step, exc), exc)
            raise
        custom = [self._event(kind, node, step + 1, payload) for kind, payload in ctx._events]
        return delta, custom

    def _advance(
        self, node: str, step: int, state: dict[str, Any], delta: dict[str, Any]
    ) -> tuple[dict[str, Any], str, str]:
        """Merge the delta and route; on any failure the run fails with its state intact."""
        wf = self.workflow
        try:
            new_state = apply_delta(state, delta, wf.reducers)
            new_json = dumps(new_state)
        except InvalidState as exc:
            self._stop(Status.FAILED, node, step, self._failed(node, step, exc), exc)
            raise
        except Exception as exc:  # a custom reducer raised
            error = NodeFailed(self.run_id, node, step, exc)
            self._stop(Status.FAILED, node, step, self._failed(node, step, error), error)
            raise error from exc
        try:
            view = loads(new_json) if node in wf.branches else new_state
            nxt = wf.route(node, view, run_id=self.run_id)
        except RoutingError as exc:
            self._stop(Status.FAILED, node, step, self._failed(node, step, exc), exc)
            raise
        return new_state, new_json, nxt

    def _failed(self, node: str, step: int, error: BaseException) -> Event:
        cause = error.error if isinstance(error, NodeFailed) else None
        payload: dict[str, Any] = {"error": describe(error)}
        if cause is not None:
            payload["cause"] = describe(cause)
        return self._event(EventType.FAILED, node, step, payload)

    def _pause(self, node: str, when: str, after: str | None, step: int, state_json: str) -> Event:
        """Pause before ``node`` with the state unchanged (entry interrupt, continued run)."""
        digest = pending_digest(self.run_id, node, step, state_json)
        event = self._event(
            EventType.INTERRUPTED,
            node,
            step,
            {"when": when, "after": after, "digest": digest, "state": loads(state_json)},
        )
        self._commit(
            StepCommit(Status.PENDING, node, step, [event], pending_digest=digest, release=True)
        )
        return event

    def _finish(self, state: dict[str, Any], state_json: str, step: int) -> Event:
        event = self._event(EventType.COMPLETED, END, step, {"state": loads(state_json)})
        self._commit(StepCommit(Status.COMPLETED, END, step, [event], release=True))
        return event
