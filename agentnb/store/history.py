"""A run's history, listed without decoding its states; each state loaded when asked for.

``run.history()`` is a :class:`History`: a sequence of :class:`LazyCheckpoint`, one per
checkpoint, oldest first. Listing reads only each checkpoint's step, node and time (an
index: :meth:`~agentnb.store.base.Checkpointer.list_checkpoints`); ``item.state`` is one
read of one checkpoint, every time it is asked for (a fresh copy, so nothing a caller does
to it reaches the store, and iterating a long history never holds every state in memory).

Storage format for long runs (the next step of issue #13)
--------------------------------------------------------
Today every checkpoint stores the whole state as JSON. The format that replaces it keeps
what the events already carry. Its codec (deltas computed from two states, snapshots,
rebuild) is :mod:`agentnb.store.deltas`, property-tested; the checkpoint table, the
migration and the driver do not use it yet:

* **Deltas.** A step's checkpoint row stores the step's *delta* — the node's returned
  update, as its ``state_update`` event already holds it — not the merged state. For a
  key whose reducer is built in (replace, ``messages`` append/merge-by-id) the merged value
  is recomputed on load by applying the same reducer: the reducers are pure and
  deterministic, so ``apply(state_k, delta_k+1) == state_k+1`` exactly. A superstep's
  checkpoint stores its tasks' deltas in merge order (declaration or Send order), which
  the same reducers replay.
* **Custom reducers.** A reducer the graph does not declare ``replayable`` may depend on
  things outside the delta (time, randomness, a library version), so its *merged value* is
  stored in the row instead of the delta, for that key only (``{"set": {key: merged}}``
  beside ``{"apply": delta_without_key}``). Replaying never calls user code.
* **Snapshots.** Every ``K = 100`` steps, or once the deltas since the last snapshot exceed
  ``M = 256 KiB`` of JSON, or when a person edits the state (approve with edits, a fork's
  ``update``), the row stores the full state (``kind = 'snapshot'``). Loading step ``k``
  reads the nearest snapshot at or before ``k`` and applies at most ``K`` deltas: one
  range read of consecutive rows of one run, bounded in size by ``M`` plus one state.
  A run's first checkpoint and a fork's first are always snapshots, so no chain crosses
  runs.
* **Rows.** ``checkpoints(run_id, step, seq, node, at, kind, body)`` with the small
  columns first, so listing a run reads only them; the events stay in ``entries``.
* **Migration** (a Python step of the migration after 0007, one transaction per run): walk
  each run's full-state checkpoints in order; a snapshot for the first and every K-th.
  Each other step becomes a row computed from the two full states alone, with no reducer
  involved: a list key whose old value is a prefix of the new one stores the appended
  tail (``{"append": {key: tail}}``), any other changed key its new value (``"set"``),
  and a step where a key disappeared (or the keys changed order) is a snapshot. Before
  the old column is cleared, each converted step is rebuilt and compared with the stored
  full state; a run whose rebuild differs anywhere keeps every step as a snapshot
  (lossless by construction). The file is then vacuumed, which also turns on incremental
  auto-vacuum.
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
