"""What a node streams while it runs (``ctx.emit``): live to a reader, one record when saved.

An LLM's tokens or a tool's progress arrive fast; the store must not take them one by one.
Each task keeps what it emitted, per kind, and writes it as **one event** at the end of
its step (``{"data": [...], "count": n}``, at most :data:`KEEP` items, the rest counted
in ``dropped``) — or nothing, with ``compile(..., keep_streams=False)``. A reader of
``astream(mode="custom")`` gets each item as an :class:`Emitted` the moment it is emitted
(async nodes, and sync nodes of a multi-task superstep, which run in threads; a sync node
on the event loop's thread is seen when it returns). The live buffer is bounded too: a
reader that falls :data:`LIVE` items behind loses the oldest, counted in ``Live.dropped``.

Whoever drives the run, ``workflow.subscribe(listener, mode="custom")`` is told of every
item as it is emitted (in the node's thread), so a panel shows a run's tokens live whether
its own button, a cell's ``run.run()`` or an in-process :class:`~agentnb.Worker` drives it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentnb._listeners import Listeners

__all__ = ["KEEP", "LIVE", "Emitted", "Live", "Streams"]

KEEP = 1000
"""Items of one kind one task keeps for its saved record."""
LIVE = 10_000
"""Items a live reader may fall behind before the oldest are dropped."""


@dataclass(frozen=True, slots=True)
class Emitted:
    """One item a node emitted (``ctx.emit(kind, data)``), as a live reader gets it."""

    run_id: str
    node: str
    task: str
    kind: str
    data: Any
    at: float


class Live:
    """The bounded, thread-safe channel from running nodes to one ``astream`` reader."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.items: deque[Emitted] = deque(maxlen=LIVE)
        self.flag = asyncio.Event()
        self.dropped = 0

    def put(self, item: Emitted) -> None:
        if len(self.items) == LIVE:
            self.dropped += 1
        self.items.append(item)  # deque.append is atomic: safe from the worker threads
        self.loop.call_soon_threadsafe(self.flag.set)

    def drain(self) -> list[Emitted]:
        self.flag.clear()
        taken = []
        while self.items:
            taken.append(self.items.popleft())
        return taken


class Streams:
    """What one task emitted, per kind, bounded; flushed as one event per kind."""

    def __init__(
        self,
        keep: bool,
        live: Live | None,
        run_id: str,
        node: str,
        task: str,
        listeners: Listeners[[Emitted]] | None = None,
    ) -> None:
        self.keep, self.live, self.listeners = keep, live, listeners
        self.run_id, self.node, self.task = run_id, node, task
        self.kept: dict[str, list[Any]] = {}
        self.counts: dict[str, int] = {}

    def add(self, kind: str, data: Any) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.keep:
            kept = self.kept.setdefault(kind, [])
            if len(kept) < KEEP:
                kept.append(data)
        if self.live is not None or self.listeners:
            item = Emitted(self.run_id, self.node, self.task, kind, data, time.time())
            if self.live is not None:
                self.live.put(item)
            if self.listeners:
                self.listeners.notify(item)

    def flush(self, sink: Callable[[str, dict[str, Any]], None]) -> None:
        """Record what was kept: one event per kind, in the order kinds first appeared."""
        if not self.keep:
            return
        for kind, items in self.kept.items():
            payload: dict[str, Any] = {"data": items, "count": self.counts[kind]}
            if self.counts[kind] > len(items):
                payload["dropped"] = self.counts[kind] - len(items)
            sink(kind, payload)
        self.kept, self.counts = {}, {}
