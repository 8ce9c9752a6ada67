"""``RunLog``: what a panel keeps of a run's event log — counts and bookmarks, not the events.

A run of 100,000 events must not live in the kernel twice (the store has it) nor reach the
browser at once. The panel reads each new event once, in pages, and keeps:

* how many events there are, in all and per type (the browser's scroll range and filter);
* a **bookmark** every :data:`BLOCK` events, in all and per type: the ``seq`` of that row,
  so row ``i`` of any filter is one read from the store from the bookmark before it;
* the last :data:`WINDOW` events (the pause, the decision and the state's last delta are
  read from them);
* the overlay as an :class:`~agentnb.render.overlay.OverlayFold`, plus a copy of the fold
  every :data:`FOLD_EVERY` events at a step boundary, so the overlay at a past step is a
  replay of at most that many events, not of the log up to it.

Everything a browser view shows is read from the store on demand (:meth:`RunLog.page`,
:meth:`RunLog.overlay_at`), a bounded page at a time.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from agentnb.render.overlay import OverlayFold
from agentnb.store.records import Event, EventType
from agentnb.widgets._events import event_row, last_delta, next_texts, settled_at

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow
    from agentnb.store.base import Checkpointer

__all__ = ["BLOCK", "FOLD_EVERY", "PAGE", "READ", "WINDOW", "RunLog"]

BLOCK = 256
"""Rows between two bookmarks: a page read skips at most this many rows."""
WINDOW = 4096
"""Recent events kept in memory (a pause's interrupts and decisions are among them)."""
FOLD_EVERY = 4096
"""Events between two kept overlay folds (the replay bound of the history slider)."""
PAGE = 200
"""At most this many log rows per message to the browser."""
READ = 2000
"""Events per read from the store."""


class RunLog:
    """One run's log as a panel pages it (see the module docstring)."""

    def __init__(self, store: Checkpointer, run_id: str, workflow: Workflow) -> None:
        self.store, self.run_id, self.workflow = store, run_id, workflow
        self.seq = 0
        """The last event read (everything up to it is counted, bookmarked and folded)."""
        self.counts: dict[str, int] = {}
        """Events per type."""
        self.total = 0
        self.recent: deque[Event] = deque(maxlen=WINDOW)
        self.fold = OverlayFold(workflow)
        self.last_delta: dict[str, Any] = {}
        """What the last superstep's ``state_update`` events changed, every task's delta
        merged (the keys the state view marks changed)."""
        self._delta_step = -1
        self._marks: dict[str, list[int]] = {"": []}  # filter -> seq of rows 0, BLOCK, ...
        # (step, seq): the fold after every event of the steps before `step`, up to `seq`.
        self._folds: list[tuple[int, int, OverlayFold]] = [(0, 0, OverlayFold(workflow))]
        self._since_fold = 0
        self._step = 0

    # -- reading what is new (the relay thread) --------------------------------------------

    def read(self, upto: int) -> Iterator[list[Event]]:
        """Read the events after :attr:`seq` up to ``upto``, a page at a time, folding each.

        Yields each page once it is counted, so a caller looks at the new events without
        the log being held: a page is at most :data:`READ` events.
        """
        while self.seq < upto:
            page = [
                e
                for e in self.store.events(self.run_id, after=self.seq, limit=READ)
                if e.seq <= upto
            ]
            if not page:
                return
            for event in page:
                self._add(event)
            yield page

    def _add(self, event: Event) -> None:
        if event.step != self._step:
            if self._since_fold >= FOLD_EVERY:  # keep the fold as it stood before this step
                self._folds.append((event.step, self.seq, self.fold.copy()))
                self._since_fold = 0
            self._step = event.step
        for key in ("", event.type):
            n = self.counts.get(key, 0) if key else self.total
            if n % BLOCK == 0:
                self._marks.setdefault(key, []).append(event.seq)
            if key:
                self.counts[key] = n + 1
        self.total += 1
        self.seq = event.seq
        self.recent.append(event)
        self.fold.add(event)
        self._since_fold += 1
        if event.type == EventType.STATE_UPDATE:
            if event.step != self._delta_step:  # a new superstep: its tasks' deltas only
                self.last_delta, self._delta_step = {}, event.step
            self.last_delta = {**self.last_delta, **last_delta([event])}

    # -- what a browser view asks for --------------------------------------------------------

    def size(self, kind: str = "") -> int:
        """Rows of the log shown with filter ``kind`` (``""``: every type)."""
        return self.total if not kind else self.counts.get(kind, 0)

    def page(self, kind: str, start: int, count: int) -> list[dict[str, Any]]:
        """Rows ``start`` .. ``start + count`` of the log filtered by ``kind``, from the store."""
        size = self.size(kind)
        start, count = max(0, start), min(count, PAGE)
        if start >= size or count <= 0:
            return []
        marks = self._marks[kind]
        block = start // BLOCK
        skip = start - block * BLOCK
        after = marks[block] - 1
        chosen: list[Event] = []
        while len(chosen) < count and after < self.seq:
            found = self.store.events(self.run_id, after=after, limit=READ)
            if not found:
                break
            for event in found:
                if event.seq > self.seq or len(chosen) == count:
                    return self.rows(chosen)
                if kind and event.type != kind:
                    continue
                if skip:
                    skip -= 1
                    continue
                chosen.append(event)
            after = found[-1].seq
        return self.rows(chosen)

    def rows(self, events: Sequence[Event], first_index: int | None = None) -> list[dict[str, Any]]:
        """Log rows for ``events`` (in log order), each ``state_update`` naming the next
        superstep from every update of its step — read from the store where the step runs
        past either end of ``events``. With ``first_index``, each row carries its index ``i``."""
        before, after = self._step_edge(events, before=True), self._step_edge(events, before=False)
        leads = next_texts([*before, *events, *after])
        rows = [event_row(e, leads.get(e.step)) for e in events]
        if first_index is not None:
            rows = [{**row, "i": first_index + k} for k, row in enumerate(rows)]
        return rows

    def _step_edge(self, events: Sequence[Event], before: bool) -> list[Event]:
        """The ``state_update`` events of the superstep at one end of ``events`` that lie
        outside them: the events of one step are consecutive (committed together)."""
        updates = [e for e in events if e.type == EventType.STATE_UPDATE]
        if not updates:
            return []
        edge = updates[0] if before else updates[-1]
        same: list[Event] = []
        for event in self._away(edge.seq, before):
            if event.step != edge.step:
                break
            if event.type == EventType.STATE_UPDATE:
                same.append(event)
        return same[::-1] if before else same

    def _away(self, seq: int, before: bool) -> Iterator[Event]:
        """The events next to ``seq``, moving away from it (up to :attr:`seq`): from the
        recent window when it covers them, else read from the store a page at a time."""
        recent = self.recent
        if recent and recent[0].seq < seq:
            yield from (
                (e for e in reversed(recent) if e.seq < seq)
                if before
                else (e for e in recent if e.seq > seq)
            )
            if not before or recent[0].seq == 1:
                return
            seq = recent[0].seq
        while before and seq > 1:
            start = max(0, seq - 1 - BLOCK)
            found = [
                e for e in self.store.events(self.run_id, after=start, limit=BLOCK) if e.seq < seq
            ]
            if not found:
                return
            yield from reversed(found)
            seq = found[0].seq
        after = seq
        while not before and after < self.seq:
            found = self.store.events(self.run_id, after=after, limit=READ)
            if not found:
                return
            yield from (e for e in found if e.seq <= self.seq)
            after = found[-1].seq

    def tail(self, kind: str, count: int) -> list[dict[str, Any]]:
        """The last ``count`` rows of the filter (a view opening at the end of the log)."""
        return self.page(kind, self.size(kind) - count, count)

    def overlay_at(self, step: int) -> tuple[OverlayFold, dict[str, Any]]:
        """The fold of the run as it stood after ``step`` nodes, and that step's delta.

        Starts from the last kept fold before ``step`` and replays the events from there
        (at most :data:`FOLD_EVERY` events plus those of ``step``), read from the store.
        """
        at = bisect.bisect_right([s for s, _, _ in self._folds], step) - 1
        _, after, kept = self._folds[max(at, 0)]
        fold = kept.copy()
        delta: dict[str, Any] = {}
        while after < self.seq:
            found = self.store.events(self.run_id, after=after, limit=READ)
            if not found:
                break
            for event in found:
                if event.step > step or event.seq > self.seq:
                    return fold, delta
                if settled_at(event, step):
                    fold.add(event)
                    if event.step == step and event.type == EventType.STATE_UPDATE:
                        given = event.payload.get("delta")
                        delta = given if isinstance(given, dict) else {}
            after = found[-1].seq
        return fold, delta

    @property
    def held(self) -> int:
        """Events held in memory now (the bound the tests check)."""
        return len(self.recent)

    @property
    def bookmarks(self) -> int:
        """Bookmarks and kept folds held (they grow by one per :data:`BLOCK` events)."""
        return sum(len(m) for m in self._marks.values()) + len(self._folds)
