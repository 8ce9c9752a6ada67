"""The loop that executes nodes: one lease, one transaction per step, events as they happen.

For each node: emit ``node_start``, call the node on a fresh copy of the state, check the
delta is JSON, merge it, route, then write checkpoint + events in one commit and emit the
rest. A pause (interrupt) or the end is folded into the same commit as the step that
reaches it, so a durable step costs one transaction.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from agentnb._json import check, dumps, loads
from agentnb.errors import (
    BreakerOpen,
    InvalidState,
    NodeFailed,
    RoutingError,
    StepBudgetExhausted,
    describe,
)
from agentnb.graph.builder import END
from agentnb.graph.state import apply_delta
from agentnb.resilience import guarded_call
from agentnb.store.base import CheckpointWrite, StepCommit, pending_digest
from agentnb.store.records import Event, EventType, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.graph.builder import NodeSpec
    from agentnb.graph.run import NodeContext, Run

__all__ = ["Driver"]

_YIELD_EVERY = 0.005
"""Seconds between forced trips to the event loop, so cancellation lands even when every
node is synchronous (and other tasks, like a widget's, keep running)."""

_RUNNING, _PENDING, _COMPLETED = Status.RUNNING, Status.PENDING, Status.COMPLETED
_NODE_START, _STATE_UPDATE = EventType.NODE_START, EventType.STATE_UPDATE


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
        # Where the run stands after the last commit, mirrored into run._record at the end.
        self.status = Status.RUNNING
        self.node = ""
        self.step = 0
        self.error: dict[str, Any] | None = None
        self.digest: str | None = None

    def _event(self, type: str, node: str | None, step: int, payload: dict[str, Any]) -> Event:
        self.seq += 1
        return Event(self.run_id, self.seq, step, type, node, payload, time.time())

    def _commit(self, change: StepCommit) -> None:
        self.store.commit(
            self.run_id, self.fence, change, lease_seconds=self.workflow.lease_seconds
        )
        self.released = change.release
        self.pending = []
        self.status, self.node, self.step = change.status, change.node, change.step
        self.error, self.digest = change.error, change.pending_digest
        if self.workflow.listeners:
            self.workflow._notify(change.events)

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
        self.status, self.node, self.step = record.status, record.node, record.step
        self.error, self.digest = record.error, record.pending_digest
        try:
            if record.status == Status.PENDING or record.status.finished:
                return
            async for event in self._loop(record, max_nodes):
                yield event
        finally:
            if not self.released:
                self.store.release(self.run_id, self.fence)
            run._record = dataclasses.replace(
                record,
                status=self.status,
                node=self.node,
                step=self.step,
                seq=self.seq or record.seq,
                error=self.error,
                pending_digest=self.digest,
                lease_owner=None,
                lease_expires=None,
            )

    async def _loop(self, record: RunRecord, max_nodes: int | None) -> AsyncIterator[Event]:
        run, wf = self.run, self.workflow
        self.seq = record.seq
        node, step = record.node, record.step
        approved = record.status == Status.APPROVED
        state, state_json = run._state, run._state_json
        before, after_nodes = wf.interrupts_before, wf.interrupts_after
        executed = 0
        last_yield = time.monotonic()
        try:
            while True:
                if node == END:
                    yield self._finish(state_json, step)
                    return
                if max_nodes is not None and executed >= max_nodes:
                    return
                if step >= record.max_steps:
                    error = StepBudgetExhausted(self.run_id, record.max_steps, node)
                    yield self._stop(
                        Status.FAILED, node, step, self._failed(node, step, error), error
                    )
                    raise error
                if node in before and not approved:
                    yield self._pause(node, step, state_json)
                    return
                approved = False

                start = self._event(_NODE_START, node, step, {})
                self.pending = [start]
                yield start
                delta = await self._call(node, step, state_json)
                new_state, new_json, nxt = self._advance(node, step, state, delta)
                step += 1
                executed += 1
                events = self.pending
                events.append(self._event(_STATE_UPDATE, node, step, {"delta": delta, "next": nxt}))
                after = node in after_nodes
                checkpoint = CheckpointWrite(step, nxt, new_json)
                if after or nxt in before:
                    digest = pending_digest(self.run_id, nxt, step, new_json)
                    payload = {
                        "when": "after" if after else "before",
                        "after": node if after else None,
                        "digest": digest,
                        "state": loads(new_json),
                    }
                    events.append(self._event(EventType.INTERRUPTED, nxt, step, payload))
                    change = StepCommit(
                        _PENDING, nxt, step, events, checkpoint, None, digest, release=True
                    )
                elif nxt == END:
                    events.append(
                        self._event(EventType.COMPLETED, END, step, {"state": loads(new_json)})
                    )
                    change = StepCommit(_COMPLETED, END, step, events, checkpoint, release=True)
                else:
                    change = StepCommit(_RUNNING, nxt, step, events, checkpoint)
                self._commit(change)
                state, state_json = new_state, new_json
                run._state, run._state_json = new_state, new_json
                for event in events[1:]:
                    yield event
                if change.status is not _RUNNING:
                    return
                node = nxt
                now = time.monotonic()
                if now - last_yield > _YIELD_EVERY:
                    last_yield = now
                    await asyncio.sleep(0)
        except (asyncio.CancelledError, KeyboardInterrupt) as exc:
            if not self.released:
                cancelled = self._event(
                    EventType.CANCELLED, node, step, {"reason": type(exc).__name__}
                )
                self._stop(Status.CANCELLED, node, step, cancelled, None)
            raise

    async def _call(self, node: str, step: int, state_json: str) -> dict[str, Any]:
        """Run the node on a fresh copy of the state; return its checked delta."""
        from agentnb.graph.run import NodeContext

        spec = self.workflow.nodes[node]
        ctx = NodeContext(self.run, node, step, self._sink(node, step)) if spec.takes_ctx else None
        try:
            if spec.guarded and (spec.timeout is not None or spec.breaker is not None):
                result = await self._guarded(spec, node, step, state_json, ctx)
            elif spec.guarded:
                # Retry only: the first attempt is a plain call; the policy takes over if it
                # fails (most calls succeed, and this keeps a retry wrapper nearly free).
                try:
                    result = spec.fn(loads(state_json), ctx) if ctx else spec.fn(loads(state_json))
                    if inspect.isawaitable(result):
                        result = await result
                except Exception as first:
                    result = await self._guarded(spec, node, step, state_json, ctx, first)
            else:
                result = spec.fn(loads(state_json), ctx) if ctx else spec.fn(loads(state_json))
                if inspect.isawaitable(result):
                    result = await result
            if result is None:
                result = {}
            elif not isinstance(result, dict):
                raise TypeError(
                    f"a node returns a dict of changes or None, not {type(result).__name__}"
                )
        except BreakerOpen as exc:
            exc.run_id = self.run_id
            self._stop(Status.FAILED, node, step, self._failed(node, step, exc), exc)
            raise
        except Exception as exc:
            error = NodeFailed(self.run_id, node, step, exc)
            self._stop(Status.FAILED, node, step, self._failed(node, step, error), error)
            raise error from exc
        try:
            delta: dict[str, Any] = loads(dumps(result, root=f"delta of {node!r}"))
            if delta != result:  # tuples became lists (fine) or keys became strings (not)
                check(result, root=f"delta of {node!r}")
        except InvalidState as exc:
            self._stop(Status.FAILED, node, step, self._failed(node, step, exc), exc)
            raise
        return delta

    def _sink(self, node: str, step: int) -> Callable[[str, dict[str, Any]], None]:
        def record(type: str, payload: dict[str, Any]) -> None:
            self.pending.append(self._event(type, node, step, payload))

        return record

    async def _guarded(
        self,
        spec: NodeSpec,
        node: str,
        step: int,
        state_json: str,
        ctx: NodeContext | None,
        failed: Exception | None = None,
    ) -> Any:
        """Call a node under its timeout, retry policy and circuit breaker."""

        def report(type: str, payload: dict[str, Any]) -> None:
            self.pending.append(self._event(type, node, step, payload))

        def make_args() -> tuple[Any, ...]:  # a fresh copy of the state for every attempt
            return (loads(state_json), ctx) if ctx else (loads(state_json),)

        return await guarded_call(
            spec.fn,
            make_args,
            timeout=spec.timeout,
            retry=spec.retry,
            breaker=spec.breaker,
            is_async=spec.is_async,
            owner=self.run_id,
            name=node,
            report=report,
            failed=failed,
        )

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
        if node not in wf.branches:
            return new_state, new_json, wf.edges.get(node, END)
        try:
            nxt = wf.route(node, loads(new_json), run_id=self.run_id)
        except RoutingError as exc:
            self._stop(Status.FAILED, node, step, self._failed(node, step, exc), exc)
            raise
        return new_state, new_json, nxt

    def _failed(self, node: str, step: int, error: BaseException) -> Event:
        # One shape for every failure event (``retry``, ``failed``): ``error`` is what went
        # wrong in the user's code; ``raised`` is the agentnb error the caller got for it.
        cause = error.error if isinstance(error, NodeFailed) else error
        payload = {"error": describe(cause), "raised": describe(error)}
        return self._event(EventType.FAILED, node, step, payload)

    def _pause(self, node: str, step: int, state_json: str) -> Event:
        """Pause before ``node`` with the state unchanged (entry interrupt, continued run)."""
        digest = pending_digest(self.run_id, node, step, state_json)
        event = self._event(
            EventType.INTERRUPTED,
            node,
            step,
            {"when": "before", "after": None, "digest": digest, "state": loads(state_json)},
        )
        self._commit(
            StepCommit(Status.PENDING, node, step, [event], pending_digest=digest, release=True)
        )
        return event

    def _finish(self, state_json: str, step: int) -> Event:
        event = self._event(EventType.COMPLETED, END, step, {"state": loads(state_json)})
        self._commit(StepCommit(Status.COMPLETED, END, step, [event], release=True))
        return event
