"""``TokenRows``: what running nodes stream (``ctx.emit``), held for the panel, bounded.

A node streaming an LLM's answer emits a thousand tokens a second. The panel's drive hands
each :class:`~agentnb.graph.streams.Emitted` to :meth:`TokenRows.add` (the kernel's
thread); the relay takes what changed at most once per update window
(:meth:`TokenRows.take`) and sends it as one ``tokens`` message, which the browser applies
once per animation frame. So the browser hears of a burst as one small append per window,
however fast the node emits.

Memory is bounded on both sides: a row keeps its newest :data:`TEXT_LIMIT` characters
(and says how many earlier ones it no longer shows), and at most :data:`ROWS` rows are
streaming at once (further tasks are counted, not shown). A row ends when its task's
result is committed (or the drive ends); an ended row is sent once more, then forgotten.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from agentnb.graph.streams import Emitted
from agentnb.widgets._events import stream_text

__all__ = ["ROWS", "TEXT_LIMIT", "TokenRows"]

TEXT_LIMIT = 4000
"""Characters of one row's stream kept (the newest ones) in the kernel and in the browser."""
ROWS = 16
"""Rows streaming at once; the tasks beyond them are counted in ``unshown``."""


@dataclass
class _Row:
    id: int
    node: str
    task: str
    kind: str
    text: str = ""  # the newest TEXT_LIMIT characters
    unsent: str = ""  # appended since the last take (at most TEXT_LIMIT)
    chars: int = 0  # every character streamed
    items: int = 0  # every item emitted
    done: bool = False
    reset: bool = field(default=True)  # the browser must replace its text (new or cut)

    def payload(self, append: str, reset: bool) -> dict[str, Any]:
        return {
            "id": self.id,
            "node": self.node,
            "task": self.task,
            "kind": self.kind,
            "append": append,
            "reset": reset,
            "chars": self.chars,
            "items": self.items,
            "done": self.done,
        }


class TokenRows:
    """The rows of streamed text a panel shows; thread-safe (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[tuple[str, str], _Row] = {}
        self._changed: set[tuple[str, str]] = set()
        self._ids = itertools.count(1)
        self.unshown = 0
        """Items from tasks that found every row taken (told to the browser)."""

    def add(self, item: Emitted) -> None:
        """One emitted item, appended to its task's row (the kernel's thread)."""
        piece = stream_text([item.data])
        key = (item.task, item.kind)
        with self._lock:
            row = self._rows.get(key)
            if row is None:
                if len(self._rows) >= ROWS:
                    self.unshown += 1
                    return
                row = _Row(next(self._ids), item.node, item.task, item.kind)
                self._rows[key] = row
            row.items += 1
            row.chars += len(piece)
            row.text = (row.text + piece)[-TEXT_LIMIT:]
            row.unsent += piece
            if len(row.unsent) > TEXT_LIMIT:  # more than a row holds since the last take
                row.unsent, row.reset = row.text, True
            self._changed.add(key)

    def finish(self, task: str | None = None) -> None:
        """End ``task``'s rows (every row when ``None``): its result was committed."""
        with self._lock:
            for key, row in self._rows.items():
                if task is None or row.task == task:
                    row.done = True
                    self._changed.add(key)

    def take(self) -> list[dict[str, Any]]:
        """What changed since the last take, one payload per row (the relay thread)."""
        with self._lock:
            out = []
            for key in sorted(self._changed, key=lambda k: self._rows[k].id):
                row = self._rows[key]
                out.append(row.payload(row.text if row.reset else row.unsent, row.reset))
                row.unsent, row.reset = "", False
                if row.done:
                    del self._rows[key]
            self._changed.clear()
            return out

    def snapshot(self) -> list[dict[str, Any]]:
        """Every open row whole, for a view that just opened."""
        with self._lock:
            return [row.payload(row.text, True) for row in self._rows.values()]

    @property
    def open(self) -> int:
        """Rows held now (at most :data:`ROWS`)."""
        return len(self._rows)
