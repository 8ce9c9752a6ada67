"""Checkpoint rows as chains — a snapshot, then deltas — written and read the same way by
every backend.

The format is described in :mod:`agentnb.store.history`; the codec is
:mod:`agentnb.store.deltas`. This module is the part a backend shares: a backend stores
and returns rows ``(run_id, step, seq, node, at, kind, body)`` and calls

* :func:`row` — the ``(kind, body)`` to store for a :class:`~agentnb.store.base.CheckpointWrite`;
* :func:`links` — which rows make up a step, from ``(step, key, kind)`` read newest
  first without the bodies (an index scan), stopping at the nearest snapshot;
* :func:`rebuild` — the state of a step from those rows' bodies, newest first;
* :func:`rebuild_all` — every step's state from a run's rows, oldest first.

A step may have several rows (a decision's edit saves it again): the latest one counts,
and these functions skip the others, so a backend may hand them every row it has.

The writer (the driver, which holds the run's live state while it holds the lease) decides
snapshot or delta with :class:`Chain`: it keeps how many deltas, and how many bytes of
them, follow the run's last snapshot, so a backend never reads old rows to write a new one.

A delta row of step ``k`` applies to the state of the run's checkpoint at step ``k - 1``
(the latest one, when a decision's edit saved that step again). A run's first checkpoint is
always a snapshot, and so is an edited state, so no chain crosses runs or an edit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from agentnb._json import dumps, loads
from agentnb.errors import StoreError
from agentnb.store.deltas import SnapshotPolicy, diff

if TYPE_CHECKING:
    from agentnb.store.base import CheckpointWrite

__all__ = [
    "DEFAULT_POLICY",
    "DELTA",
    "SNAPSHOT",
    "Chain",
    "is_snapshot",
    "links",
    "rebuild",
    "rebuild_all",
    "row",
]

K = TypeVar("K")

SNAPSHOT = "snapshot"
"""A row whose body is the whole state (JSON)."""
DELTA = "delta"
"""A row whose body is a delta (:func:`agentnb.store.deltas.diff`, JSON) from the step before."""


DEFAULT_POLICY = SnapshotPolicy()
"""A snapshot every 100 steps, or once the deltas since the last one pass 256 KiB."""


def is_snapshot(kind: str | None) -> bool:
    """True for a snapshot row (``None``: a row written before the format had kinds)."""
    return kind is None or kind == SNAPSHOT


def row(write: CheckpointWrite) -> tuple[str, str]:
    """The ``(kind, body)`` a backend stores for ``write``."""
    if write.delta_json is not None:
        return DELTA, write.delta_json
    return SNAPSHOT, write.state_json


@dataclass(frozen=True, slots=True)
class Chain:
    """The deltas that follow a run's last snapshot: how many, their JSON bytes, and the
    snapshot's own bytes (``base``).

    The writer keeps one per run it drives, beside the live state; ``None`` where it is
    not known (a state just loaded from the store) makes the next checkpoint a snapshot.
    """

    steps: int = 0
    size: int = 0
    base: int = 0
    policy: SnapshotPolicy | None = None
    """``None``: :data:`DEFAULT_POLICY`, read when the chain grows."""

    @classmethod
    def after(cls, snapshot_json: str, policy: SnapshotPolicy | None = None) -> Chain:
        """The chain that starts with a snapshot just stored as ``snapshot_json``."""
        return cls(0, 0, len(snapshot_json), policy)

    def next(
        self,
        previous: Mapping[str, Any],
        state: Mapping[str, Any],
        appended: Mapping[str, Sequence[Any]] | None = None,
    ) -> tuple[str | None, Chain]:
        """The delta (JSON) that turns ``previous`` into ``state``, and the chain after
        it; or ``None`` when this step is to be a snapshot — the writer stores the whole
        state and continues with :meth:`after` of it. ``appended``: see
        :func:`~agentnb.store.deltas.diff`."""
        delta = diff(previous, state, appended)
        if delta is not None:
            text = dumps(delta)
            policy = self.policy or DEFAULT_POLICY
            if not policy.due(self.steps + 1, self.size + len(text), self.base):
                return text, Chain(self.steps + 1, self.size + len(text), self.base, self.policy)
        return None, Chain(0, 0, 0, self.policy)


def links(
    newest_first: Iterable[tuple[int, K, str | None]], step: int | None = None
) -> list[tuple[int, K]]:
    """``(step, key)`` of the rows that make up ``step`` (default: the first one given),
    from one run's ``(step, key, kind)`` rows ordered by step then write order, newest
    first: the latest row of each step, down to (and including) a snapshot. Empty when
    there is no row for ``step``. ``key`` is whatever finds the row's body again (SQLite:
    the entry's ``seq``). Stops reading at the snapshot: pass a cursor.
    """
    found: list[tuple[int, K]] = []
    for at, key, kind in newest_first:
        if found and found[-1][0] == at:
            continue  # an earlier row of a step saved again (a decision's edit)
        if not found and step is not None and at != step:
            return []
        found.append((at, key))
        if is_snapshot(kind):
            break
    return found


def rebuild(newest_first: Iterable[tuple[int, str | None, str]]) -> dict[str, Any]:
    """The state of the first row of ``newest_first``: ``(step, kind, body)`` rows of one
    run from that step back to (and including) a snapshot (an earlier row of a step
    already seen is skipped).

    Raises:
        StoreError: the rows end before a snapshot, or a step is missing between them.
    """
    chain: list[str] = []
    expected: int | None = None
    for step, kind, body in newest_first:
        if expected is not None and step == expected + 1:
            continue  # an earlier row of the step just taken
        if expected is not None and step != expected:
            raise StoreError(
                f"the checkpoint chain has no step {expected} (found {step}); "
                "the file is damaged: restore it from a backup"
            )
        chain.append(body)
        if is_snapshot(kind):
            return _replay(chain[-1], reversed(chain[:-1]))
        expected = step - 1
    raise StoreError(
        "a checkpoint delta has no snapshot before it; the file is damaged: "
        "restore it from a backup"
    )


def rebuild_all(
    oldest_first: Sequence[tuple[int, str | None, str]],
) -> list[dict[str, Any]]:
    """Every step's state, from one run's ``(step, kind, body)`` rows in write order (of a
    step saved twice, the latest row counts), oldest step first.

    Each state is a copy of its own (as if each step were loaded alone): changing one
    changes no other.
    """
    latest = {step: (kind, body) for step, kind, body in oldest_first}
    states: list[dict[str, Any]] = []
    state: dict[str, Any] | None = None
    last = -1
    for step, (kind, body) in sorted(latest.items()):
        if is_snapshot(kind):
            state = loads(body)
        elif state is None or step != last + 1:
            raise StoreError(
                f"the checkpoint delta of step {step} has no state before it; the file is "
                "damaged: restore it from a backup"
            )
        else:
            state = _apply_owned(state, loads(body))
        last = step
        states.append(loads(dumps(state)))
    return states


def _replay(snapshot: str, deltas: Iterable[str]) -> dict[str, Any]:
    state: dict[str, Any] = loads(snapshot)
    # One decode of all the deltas (a JSON array of them), not one call per row.
    for delta in loads("[" + ",".join(deltas) + "]"):
        state = _apply_owned(state, delta)
    return state


def _apply_owned(state: dict[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`agentnb.store.deltas.apply` in place, on a state nobody else holds (decoded
    for this rebuild): appending extends the list instead of copying it each step."""
    for key, tail in delta.get("append", {}).items():
        state[key].extend(tail)
    state.update(delta.get("set", {}))
    return state
