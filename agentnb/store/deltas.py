"""Checkpoints as deltas plus snapshots: the codec of the long-run format.

The format is described in :mod:`agentnb.store.history`. This module is its pure part,
used by the migration of full-state files and by the rebuild of any step: no storage, no
reducers — a delta here is computed from two full states alone, so replaying it never
calls user code, whatever reducer produced the change.

* :func:`diff` — the delta from one state to the next: ``{"append": {key: tail}}`` for a
  list that grew at its end, ``{"set": {key: value}}`` for any other changed key; ``None``
  when a key disappeared or the keys changed order (that step is stored as a snapshot).
  Rebuilt states encode to the same JSON text as the originals, byte for byte.
* :func:`apply` — the next state from a state and a delta (the inputs are not changed).
* :class:`SnapshotPolicy` — a snapshot once the deltas since the last one are as large
  as it was (and at least ``every`` steps on), or pass ``max_bytes`` of JSON: loading any
  step reads at most about twice its state, and a run's snapshots grow geometrically, so
  the file stays linear in what changed.
* :func:`encode` / :func:`rebuild` — a run's states to rows and back.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentnb._json import dumps

__all__ = ["Row", "SnapshotPolicy", "apply", "diff", "encode", "rebuild"]


def diff(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    appended: Mapping[str, Sequence[Any]] | None = None,
) -> dict[str, Any] | None:
    """The delta that turns ``old`` into ``new``, or ``None`` if a key of ``old`` is gone.

    ``appended`` is what the writer knows it appended to a list key (``new[key]`` is
    ``old[key] + appended[key]``, as the ``append`` reducer builds it): that key's tail is
    taken as it is, without comparing the list's kept part (a long history, every step).
    """
    if not new.keys() >= old.keys():
        return None
    # apply() keeps the old keys' order and adds new keys at the end; a state whose key
    # order differs is stored whole, so its JSON (and a digest of it) comes back the same.
    # (Every key of ``old`` is in ``new``: the rest of ``new``'s keys are the added ones.)
    keys = list(new)
    if (keys if len(keys) == len(old) else keys[: len(old)]) != list(old):
        return None
    added: dict[str, Any] = {}
    replaced: dict[str, Any] = {}
    get = old.get
    tails = appended or {}
    for key, value in new.items():
        before = get(key, _MISSING)
        if before is value:
            continue
        tail = tails.get(key) if tails else None
        if (
            tail
            and isinstance(before, list)
            and isinstance(value, list)
            and len(value) == len(before) + len(tail)
        ):
            added[key] = list(tail)
            continue
        if before is not _MISSING and _same(before, value):
            continue
        if (
            isinstance(before, list)
            and isinstance(value, list)
            and len(value) > len(before)
            and _prefix(before, value)
        ):
            added[key] = value[len(before) :]
        else:
            replaced[key] = value
    delta: dict[str, Any] = {}
    if added:
        delta["append"] = added
    if replaced:
        delta["set"] = replaced
    return delta


def apply(state: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """``state`` with ``delta`` applied, as a new dict (``state`` itself is unchanged)."""
    result = dict(state)
    for key, tail in delta.get("append", {}).items():
        result[key] = [*result[key], *tail]
    result.update(delta.get("set", {}))
    return result


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """When a step is stored whole: once the deltas since the last snapshot weigh as much
    as it did (``base`` bytes of JSON) and ``every`` steps have passed, or at once past
    ``max_bytes`` of deltas.

    A fixed period alone would store a growing state whole every ``every`` steps — a file
    quadratic in the run's length; weighing the deltas against the snapshot makes the
    snapshots' sizes grow geometrically instead (2,000 appended messages: 6 snapshots,
    the first included, instead of 20).
    """

    every: int = 100
    max_bytes: int = 256 * 1024

    def due(self, steps_since: int, bytes_since: int, base: int = 0) -> bool:
        if bytes_since >= self.max_bytes:
            return True
        return steps_since >= self.every and bytes_since >= base


@dataclass(frozen=True, slots=True)
class Row:
    """One stored checkpoint: ``kind`` is ``"snapshot"`` (``body`` = the state) or
    ``"delta"`` (``body`` = the delta from the previous step)."""

    kind: str
    body: dict[str, Any]


def encode(states: Sequence[Mapping[str, Any]], policy: SnapshotPolicy | None = None) -> list[Row]:
    """A run's successive states as rows: the first a snapshot, then deltas and snapshots."""
    policy = policy or SnapshotPolicy()
    rows: list[Row] = []
    steps_since = bytes_since = base = 0
    for index, state in enumerate(states):
        delta = None if index == 0 else diff(states[index - 1], state)
        if delta is not None:
            size = len(dumps(delta))
            if not policy.due(steps_since + 1, bytes_since + size, base):
                rows.append(Row("delta", delta))
                steps_since, bytes_since = steps_since + 1, bytes_since + size
                continue
        rows.append(Row("snapshot", dict(state)))
        steps_since = bytes_since = 0
        base = len(dumps(state))
    return rows


def rebuild(rows: Sequence[Row], index: int) -> dict[str, Any]:
    """The state of row ``index``: its nearest snapshot at or before it, then the deltas."""
    start = index
    while rows[start].kind != "snapshot":
        start -= 1
        if start < 0:
            raise ValueError("no snapshot before this row: the chain is broken")
    state = dict(rows[start].body)
    for row in rows[start + 1 : index + 1]:
        state = apply(state, row.body)
    return state


_MISSING = object()


def _prefix(head: list[Any], items: list[Any]) -> bool:
    """``items`` starts with ``head``. A reducer that appends keeps the very objects, so
    they are compared by identity first (at C speed); JSON equality settles the rest."""
    if all(map(operator.is_, head, items)):
        return True
    return _same(items[: len(head)], head)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``1`` and ``True`` differ, as do ``1`` and ``1.0`` once stored."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
