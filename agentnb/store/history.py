"""A run's history, listed without decoding its states; each state loaded when asked for.

``run.history()`` is a :class:`History`: a sequence of :class:`LazyCheckpoint`, one per
checkpoint, oldest first. Listing reads only each checkpoint's step, node and time (an
index: :meth:`~agentnb.store.base.Checkpointer.list_checkpoints`); ``item.state`` is one
read of one checkpoint, every time it is asked for (a fresh copy, so nothing a caller does
to it reaches the store, and iterating a long history never holds every state in memory).

Storage format for long runs (issue #13)
----------------------------------------
Every checkpoint used to store the whole state as JSON. Now a run's checkpoints are a
chain of snapshots, skips and deltas. The codec (deltas computed from two states, merged,
applied) is :mod:`agentnb.store.deltas`, property-tested; what every backend shares
(which row to store, which rows make up a step, how to rebuild it) is
:mod:`agentnb.store.chains`:

* **Deltas.** A step's row stores what changed from the step before, computed from the
  two states alone: a list that grew at its end stores the appended tail
  (``{"append": {key: tail}}``), any other changed key its new value (``"set"``). No
  reducer is involved, so replaying never calls user code and a custom reducer (replayable
  or not, deterministic or not) has its merged value stored, never recomputed. A step
  where a key disappeared (or the keys changed order) is a snapshot.
* **Anchors: skips and snapshots.** Every ``K = 100`` deltas (or ``M = 256 KiB`` of them)
  the chain is cut by an anchor row. It is a **skip** — the delta from the previous anchor,
  the deltas in between merged into one — unless a **snapshot** (the whole state) is due:
  when the skips since the last snapshot would mostly carry values replaced since (a key
  rewritten every step), or when there are ``K`` of them weighing as much as the snapshot
  (so snapshots of a growing state grow geometrically). A person's edit (approve with
  edits), a run's and a fork's first checkpoint and the first one a process writes after
  loading a state from the store are snapshots, so no chain crosses runs, edits or writers.
* **Loading step ``k``** reads fewer than ``K`` deltas back to an anchor, then the anchors
  back to a snapshot: about ``2 * sqrt(k)`` rows for an agent loop appending a message per
  step (step 2,000: 119 rows, each appended message read once), where a chain of deltas
  back to a geometric snapshot read up to ``k / 2`` (796 at step 2,000: the time went on
  rows, not bytes). Fixed snapshots every ``K`` steps would read as few rows but store a
  growing state whole each time, a file quadratic in the run's length; a skip holds only
  what was added since the last anchor, so each appended item is stored twice (its
  delta and one skip) and the file stays linear in what changed.
* **Rows.** ``(run_id, step, seq, node, at, kind, body)``, ``kind`` one of ``snapshot``,
  ``skip``, ``delta`` (NULL: an entry without a checkpoint, such as a decision's); the
  events stay in ``entries``. The writer (the driver, holding the lease and the live
  state) decides the kind with :class:`~agentnb.store.chains.Chain`; a backend never
  reads old rows to write one. SQLite's journal (0012) keeps the columns every walk and
  listing reads (``step, kind, node, at``) before the bodies (``tasks``, ``events``,
  ``state``), and one index besides its primary key, ``entries_anchors`` (snapshots and
  skips, partial on the kind alone), so the common step writes one B-tree page: the
  listing and the deltas back to an anchor read the primary key, each row up to its
  small columns (:mod:`agentnb.store.sql_checkpoints` says what SQLite still reads of a
  row bigger than its page). PostgreSQL reads the same statements and has the same two
  indexes. SQLite's connection keeps a 16 MiB page cache, so loading a long run's state
  does not evict the pages of the one loaded before.
* **Migration** 0008 added ``kind``; 0011 (SQLite; a Python step, one savepoint per run)
  walks each run's checkpoints in step order — full states from before 0008, or 0008's
  chains of deltas and geometric snapshots — and cuts them as a writer would: a snapshot
  where the chain asks for one, a delta computed from the two full states alone, a skip
  at every anchor. Each rewritten step is rebuilt and compared with the state, byte for
  byte, before the next; a run whose rebuild differs anywhere (or whose steps have a gap)
  is rolled back to its savepoint and keeps its rows as they were (lossless by
  construction). PostgreSQL's version 5 adds the index alone: its existing chains read
  back as they are. 0012 (SQLite) rebuilds ``entries`` in its new column order, every
  row copied as it is, and drops the covering index ``entries_chain`` (PostgreSQL's
  version 6 drops it too). The pages freed are reused by later writes; the first prune
  returns them to the file system (one ``VACUUM`` that also turns on incremental
  auto-vacuum), so opening a file never pays a hidden full rewrite of the file (0012
  rewrites the journal's table once).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from agentnb.store.base import Checkpointer
    from agentnb.store.records import Checkpoint

__all__ = ["CheckpointInfo", "History", "LazyCheckpoint"]


@dataclass(frozen=True, slots=True)
class CheckpointInfo:
    """Where a checkpoint is, without its state: run, step, next node, time saved."""

    run_id: str
    step: int
    node: str
    at: float


class LazyCheckpoint:
    """One checkpoint of a :class:`History`; its state is read from the store on access."""

    __slots__ = ("_store", "at", "node", "run_id", "step")

    def __init__(self, store: Checkpointer, info: CheckpointInfo) -> None:
        self._store = store
        self.run_id = info.run_id
        self.step = info.step
        self.node = info.node
        self.at = info.at

    def load(self) -> Checkpoint:
        """The whole checkpoint, read now (one read)."""
        return self._store.checkpoint(self.run_id, self.step)

    @property
    def state(self) -> dict[str, Any]:
        """The state after :attr:`step` nodes: a fresh copy read on each access."""
        return self.load().state

    @property
    def tasks(self) -> dict[str, Any] | None:
        """The next superstep's frontier when it is more than :attr:`node` (read on access)."""
        return self.load().tasks

    def __repr__(self) -> str:
        return f"<LazyCheckpoint {self.run_id[:12]} step {self.step}, next {self.node!r}>"


class History(Sequence[LazyCheckpoint]):
    """Every checkpoint of a run, oldest first: the state after 0, 1, 2, ... nodes.

    Example:
        >>> from agentnb import MemoryCheckpointer, StateGraph
        >>> g = StateGraph("count")
        >>> g.add_node("inc", lambda s: {"n": s["n"] + 1})
        >>> g.set_entry_point("inc")
        >>> run = g.compile(MemoryCheckpointer()).start({"n": 0}).run()
        >>> history = run.history()
        >>> [cp.step for cp in history], history[-1].state
        ([0, 1], {'n': 1})
    """

    def __init__(self, store: Checkpointer, infos: Sequence[CheckpointInfo]) -> None:
        self._items = [LazyCheckpoint(store, info) for info in infos]

    @overload
    def __getitem__(self, index: int) -> LazyCheckpoint: ...
    @overload
    def __getitem__(self, index: slice) -> list[LazyCheckpoint]: ...
    def __getitem__(self, index: int | slice) -> LazyCheckpoint | list[LazyCheckpoint]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[LazyCheckpoint]:
        return iter(self._items)

    @property
    def steps(self) -> list[int]:
        """The steps that have a checkpoint."""
        return [item.step for item in self._items]

    def at_step(self, step: int) -> LazyCheckpoint:
        """The checkpoint after ``step`` nodes (``KeyError`` if there is none)."""
        for item in self._items:
            if item.step == step:
                return item
        raise KeyError(step)

    def __repr__(self) -> str:
        run = self._items[0].run_id[:12] if self._items else "?"
        return f"<History of {run}: {len(self)} checkpoints>"
