"""A superstep of several tasks: a fan-out, Sends, a join's branches.

Async nodes run on the event loop, sync nodes in the workflow's thread pool, at most
``max_concurrency`` at once; each finished task's result is saved on its own (a *pending
write*), so a worker resuming after a crash runs only the tasks that had not finished.
When all are done their deltas merge in plan order through the reducers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agentnb.errors import ConflictingUpdate, InvalidState, NodeFailed
from agentnb.graph.calls import Caller
from agentnb.graph.commits import Failure
from agentnb.graph.questions import Asked
from agentnb.graph.state import apply_delta, json_copy, merge_writes
from agentnb.graph.streams import Emitted
from agentnb.graph.subgraph import ChildPaused, ChildStepped
from agentnb.graph.superstep import Task
from agentnb.store.records import Event, EventType, PendingWrite

__all__ = ["Fanout"]

_NODE_START = EventType.NODE_START


class Fanout(Caller):
    """A superstep of several tasks: run concurrently, each result saved as it finishes,
    merged in plan order."""

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
                for future in sorted(done, key=lambda f: running[f].id):
                    task = running.pop(future)
                    delta = future.result()  # raises Failure: the finally cancels the rest
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
        except Failure as failure:
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
        in if it was approved with one (``run.approve(task=..., update=...)``); a Send's
        is its payload (its whole input), with the keys of the payload the edit carries
        replaced (its other keys edit the run's state only, which a Send does not read).
        (The node still gets a copy: see ``_invoke``.)"""
        edit = self.edits.get(task.id)
        if edit is None:
            return task, state
        if task.payload is None:
            edited = await self._merge_one(task.node, step, state, edit)
        else:
            payload = task.payload
            edited = json_copy({**payload, **{k: v for k, v in edit.items() if k in payload}})
        return dataclasses.replace(task, payload=None), edited

    def _state_edits(self, tasks: Sequence[Task]) -> list[tuple[str, dict[str, Any]]]:
        """The superstep's writes from edits, in plan order: the keys that edit the state
        (a key a Send's payload carries edited that task's input only)."""
        return [
            (t.id, {k: v for k, v in self.edits[t.id].items() if k not in (t.payload or {})})
            for t in tasks
            if t.id in self.edits
        ]

    async def _merge(
        self,
        tasks: Sequence[Task],
        results: dict[str, dict[str, Any]],
        head: str,
        step: int,
        state: dict[str, Any],
    ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Merge a superstep's deltas in plan order; a conflict fails the run, saving none.

        Also returns each task's own view, what its router reads: ``state`` (the
        superstep's start) with that task's edit and delta merged in, as LangGraph routes.
        """
        edits = self._state_edits(tasks)
        writes = edits + [(t.id, results[t.id]) for t in tasks]
        try:
            nodes = self.workflow.nodes
            reducers = self.workflow.reducers
            nested = frozenset(t.id for t in tasks if nodes[t.node].subgraph is not None)
            merged = merge_writes(
                state,
                writes,
                reducers,
                run_id=self.run_id,
                step=step,
                replacing=nested,
            )
            edited = dict(edits)
            views = {}
            for t in tasks:
                own = {} if t.id in nested else reducers
                view = apply_delta(state, edited.get(t.id, {}), reducers)
                views[t.id] = apply_delta(view, results[t.id], own)
            return merged, views
        except (ConflictingUpdate, InvalidState) as exc:
            await self._fail(head, step, exc)
            raise
        except Exception as exc:  # a custom reducer raised
            error = NodeFailed(self.run_id, head, step, exc)
            await self._fail(head, step, error)
            raise error from exc
