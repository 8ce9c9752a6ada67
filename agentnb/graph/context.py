"""``NodeContext``: what a node ``fn(state, ctx)`` knows about where it runs, and what it
can do from there: record a side effect once (``ctx.once``), ask a person (``ctx.interrupt``),
stream what it produces (``ctx.emit``)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from agentnb._json import check, dumps, loads
from agentnb.errors import AgentnbError
from agentnb.store.records import EventType

if TYPE_CHECKING:
    from agentnb.store.base import Checkpointer

__all__ = ["NodeContext"]

_BUILTIN_TYPES = frozenset(t.value for t in EventType)
_NOT_DONE = object()  # ctx.once found no recorded result


class NodeContext:
    """What a node ``fn(state, ctx)`` knows about where it runs.

    Attributes:
        run_id: the run's id.
        step: how many supersteps ran before this one (0 for the first).
        node: this node's name.
        task_id: this task's id in its superstep: the node's name, or ``node[i]`` for the
            i-th :class:`~agentnb.Send` to it.
        idempotency_key: stable for this run, superstep and task — the same when the task
            is re-executed after a crash — so a payment API can de-duplicate the call.

    Example:
        >>> from agentnb import StateGraph
        >>> def work(state, ctx):
        ...     ctx.emit("progress", {"done": 1})  # a custom event, saved with the step
        ...     return {"where": f"{ctx.node} at step {ctx.step}"}
        >>> graph = StateGraph("ctx").add_node("work", work).set_entry_point("work")
        >>> run = graph.compile().invoke({})
        >>> run.state["where"]
        'work at step 0'
        >>> [event.node for event in run.events if event.type == "progress"]
        ['work']
    """

    __slots__ = (
        "_asked",
        "_sink",
        "_store",
        "_stream",
        "idempotency_key",
        "node",
        "run_id",
        "step",
        "task_id",
    )

    def __init__(
        self,
        store: Checkpointer,
        run_id: str,
        node: str,
        step: int,
        sink: Callable[[str, dict[str, Any]], None],
        task_id: str | None = None,
        stream: Callable[[str, Any], None] | None = None,
    ) -> None:
        self._store = store
        self._stream = stream
        self._sink = sink  # records an event with the task in flight
        self.run_id = run_id
        self.node = node
        self.step = step
        self.task_id = task_id or node
        self.idempotency_key = f"{run_id}:{step}:{self.task_id}"
        self._asked = 0

    def once(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run the side effect ``fn()`` at most once for this step; return its result.

        The result (JSON) is recorded in the checkpointer's ledger under
        ``idempotency_key`` + ``name``. If the step runs again — a retry, or a worker
        restarted after a crash — the recorded result is returned and ``fn`` is not
        called. A crash between ``fn`` returning and the record being written can still
        repeat it: pass ``ctx.idempotency_key`` to the service too, so it de-duplicates.
        """
        key, found = self._recorded(name)
        if found is not _NOT_DONE:
            return found
        result = fn()
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            raise TypeError(f"ctx.once({name!r}, fn): fn is async; use await ctx.aonce(...)")
        return self._record(key, name, result)

    async def aonce(self, name: str, fn: Callable[[], Any]) -> Any:
        """Async twin of :meth:`once`: ``fn()`` may return an awaitable. The ledger is
        read and written through the store's awaitable twins (the loop goes on meanwhile)."""
        key = self._key(name)
        found = self._replayed(name, key, await self._store.arecorded_effect(key))
        if found is not _NOT_DONE:
            return found
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        text = dumps(result, root=f"ctx.once({name!r}) result")
        stored = await self._store.arecord_effect(
            key, run_id=self.run_id, step=self.step, node=self.node, name=name, result_json=text
        )
        return self._done(name, key, stored)

    def _key(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise AgentnbError(f"ctx.once({name!r}, ...): name the side effect with a string")
        return f"{self.idempotency_key}:{name}"

    def _replayed(self, name: str, key: str, stored: str | None) -> Any:
        if stored is None:  # a recorded None is the JSON text "null", not None
            return _NOT_DONE
        self._sink(EventType.EFFECT_REPLAYED, {"name": name, "key": key})
        return loads(stored)

    def _recorded(self, name: str) -> tuple[str, Any]:
        key = self._key(name)
        return key, self._replayed(name, key, self._store.recorded_effect(key))

    def _record(self, key: str, name: str, result: Any) -> Any:
        text = dumps(result, root=f"ctx.once({name!r}) result")
        stored = self._store.record_effect(
            key, run_id=self.run_id, step=self.step, node=self.node, name=name, result_json=text
        )
        return self._done(name, key, stored)

    def _done(self, name: str, key: str, stored: str) -> Any:
        self._sink(EventType.EFFECT, {"name": name, "key": key})
        return loads(stored)

    def interrupt(self, question: Any) -> Any:
        """Ask a person a question; return their answer.

        ``question`` is ``{"question": "...", "schema": {JSON Schema}}`` (a bare string is
        a question without a schema). The first time, the run pauses here: the node stops,
        the run is ``pending``, and ``run.respond(value, by=...)`` records the answer
        (exactly once, audited, checked against the schema).

        On resume the node runs again **from its start**: everything before this call
        happens again, except what went through :meth:`once`, which returns its recorded
        result — so put side effects before a question in ``ctx.once``. This call then
        returns the recorded answer. A node may ask several questions; they are answered
        in order, one pause each.
        """
        from agentnb.graph.questions import Asked, check_question

        asked = check_question(question)
        check(asked, root="ctx.interrupt question")
        index = self._asked
        self._asked += 1
        key = f"{self.idempotency_key}:interrupt:{index}"
        stored = self._store.recorded_effect(key)
        if stored is None:
            raise Asked(asked, key, index)
        return loads(stored)

    def emit_each(self, kind: str, items: Iterable[Any]) -> Iterator[Any]:
        """Emit every item of ``items`` as it comes, and hand it on to the node.

        ``for token in ctx.emit_each("token", llm.stream(prompt)): text += token``
        streams an LLM's tokens out while the node keeps them too.
        """
        for item in items:
            self.emit(kind, item)
            yield item

    async def aemit_each(self, kind: str, items: AsyncIterable[Any]) -> AsyncIterator[Any]:
        """Async-iterator form of :meth:`emit_each`, for an async node.

        ``async for token in ctx.aemit_each("token", llm.astream(prompt)): ...``: each
        token reaches ``run.astream(mode="custom")`` while the node still runs.
        """
        async for item in items:
            self.emit(kind, item)
            yield item

    def emit(self, kind: str, data: Any = None) -> None:
        """Stream ``data`` (any JSON value: a token, a progress dict) out of the running node.

        A reader of ``run.astream(mode="custom")`` gets it at once, as an
        :class:`~agentnb.graph.streams.Emitted`. The store gets one event per kind at the
        end of the step, ``{"data": [...], "count": n}`` (bounded: see
        ``agentnb.graph.streams``), or nothing with ``compile(keep_streams=False)``.
        """
        if kind in _BUILTIN_TYPES or not isinstance(kind, str) or not kind:
            raise AgentnbError(
                f"ctx.emit({kind!r}): custom event types must be non-empty strings other "
                f"than the built-in ones ({', '.join(sorted(_BUILTIN_TYPES))})"
            )
        check(data, root=f"ctx.emit({kind!r}) data")
        if self._stream is None:
            self._sink(kind, {"data": [data], "count": 1})
        else:
            self._stream(kind, data)
