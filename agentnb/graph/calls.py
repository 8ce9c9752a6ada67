"""Calling one node of a superstep, and what comes back from it.

A node gets the state as a :class:`~agentnb.graph.copies.StateCopy` (copied as it is
read), runs on the event loop or in the workflow's thread pool, under its timeout, retry
policy and circuit breaker when it has them; what it reports becomes events of the step;
what it returns is checked to be a JSON delta before anything merges it.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentnb._json import INT_BITS, check, dumps, loads, surrogate
from agentnb.errors import BreakerOpen, InvalidState, NodeFailed
from agentnb.graph.commits import Committer, Failure
from agentnb.graph.context import NodeContext
from agentnb.graph.copies import StateCopy
from agentnb.graph.streams import Streams
from agentnb.graph.subgraph import drive_child
from agentnb.graph.superstep import Task
from agentnb.resilience import guarded_call

if TYPE_CHECKING:
    from agentnb.graph.builder import NodeSpec

__all__ = ["Caller", "Sink"]

Sink = Callable[[str, dict[str, Any]], None]
"""Where what a node reports goes: ``sink(event_type, payload)``."""


class Caller(Committer):
    """Calling one node: on a copy of the state, under its guards, its delta checked."""

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
            Failure: carrying the typed error (NodeFailed, BreakerOpen, InvalidState).
        """
        node = task.node
        spec = self.workflow.nodes[node]
        if not threaded and task.payload is None and node in self.workflow._direct:
            # The common case, kept lean: an unguarded function on the loop's thread, its
            # sink and streams made only when it takes a context (most nodes do not).
            emitted: Streams | None = None
            context: NodeContext | None = None
            if spec.takes_ctx:
                sink = self._sink(node, step) if sink is None else sink
                emitted = self._streams(task)
                context = NodeContext(
                    self.store, self.run_id, node, step, sink, task.id, emitted.add
                )
            try:
                try:
                    if context is None:
                        result = spec.fn(StateCopy(state))
                    else:
                        result = spec.fn(StateCopy(state), context)
                    if type(result) is not dict and inspect.isawaitable(result):
                        result = await result
                finally:
                    if emitted is not None and sink is not None:
                        emitted.flush(sink)
            except Exception as exc:
                raise Failure(node, self._node_failed(node, step, exc)) from None
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
                raise Failure(node, exc) from None
        streams: Streams | None = self._streams(task) if spec.takes_ctx else None
        ctx = (
            NodeContext(self.store, self.run_id, node, step, sink, task.id, streams.add)
            if streams is not None
            else None
        )
        # A Send's payload is its task's whole input (LangGraph's Send), not the state.
        source = state if task.payload is None else task.payload
        fresh: Callable[[], Any] = lambda: StateCopy(source)  # noqa: E731
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
            raise Failure(node, exc) from None
        except Exception as exc:
            raise Failure(node, self._node_failed(node, step, exc)) from None
        finally:
            if streams is not None:
                streams.flush(sink)
        return self._checked(node, step, result)

    def _node_failed(self, node: str, step: int, exc: Exception) -> NodeFailed:
        error = NodeFailed(self.run_id, node, step, exc)
        error.__cause__ = exc
        return error

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
            raise Failure(node, failed)
        # The common delta — a few string keys to strings, whole numbers, booleans or
        # None — is JSON as it is: a shallow copy is the copy, with no encoding. Anything
        # else (a float, a list, a subclass, a key that is not a string, an int that may
        # be too long to read back, a str that may hold a lone surrogate) takes the full
        # round trip, which names the bad key path. (isascii() is a flag test, and an
        # ASCII str holds no surrogate; bit_length() is cheaper than two comparisons.)
        for key, value in result.items():
            if type(key) is not str or (not key.isascii() and surrogate(key)):
                break
            kind = type(value)
            if kind is str:
                if not value.isascii() and surrogate(value):
                    break
            elif kind is int:
                if value.bit_length() > INT_BITS:
                    break
            elif kind is not bool and value is not None:
                break
        else:
            return dict(result)
        try:
            delta: dict[str, Any] = loads(dumps(result, root=f"delta of {node!r}"))
            if delta != result:  # tuples became lists (fine) or keys became strings (not)
                check(result, root=f"delta of {node!r}")
        except InvalidState as exc:
            raise Failure(node, exc) from None
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
