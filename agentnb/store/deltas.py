"""Checkpoints as deltas plus snapshots: the codec of the long-run format.

The format is described in :mod:`agentnb.store.history`. This module is its pure part,
used by the migration of full-state files and by the rebuild of any step: no storage, no
reducers — a delta here is computed from two full states alone, so replaying it never
calls user code, whatever reducer produced the change.

* :func:`diff` — the delta from one state to the next: ``{"append": {key: tail}}`` for a
  list that grew at its end, ``{"set": {key: value}}`` for any other changed key; ``None``
  when a key disappeared or the keys changed order (that step is stored as a snapshot).
  Rebuilt states encode to the same JSON text as the originals, byte for byte.
  :func:`diff_at` is the same delta when the writer knows which keys a step changed.
* :func:`apply` — the next state from a state and a delta (the inputs are not changed).
* :func:`merge` — one delta for several in a row (a skip row's body).
* :class:`SnapshotPolicy` — where a run's chain is cut: an anchor every ``every`` deltas
  (or ``max_bytes`` of them), a skip or a snapshot (:mod:`agentnb.store.chains`).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SnapshotPolicy", "apply", "diff", "diff_at", "merge"]


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
    return diff_at(old, new, keys, appended)


def diff_at(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    keys: Iterable[str],
    appended: Mapping[str, Sequence[Any]] | None = None,
) -> dict[str, Any]:
    """:func:`diff` of a ``new`` state that differs from ``old`` at ``keys`` alone, as
    :func:`~agentnb.graph.state.apply_delta` builds the next state from a delta with those
    keys: every other value is the very same object, and the keys ``old`` lacks come at
    the end, in ``keys``' order. Only ``keys`` are compared (the writer's step, whatever
    the state's size), and ``"set"`` lists its keys in ``keys``' order.

    The result equals ``diff(old, new, appended)`` for such a state (its ``"set"`` may
    list the keys ``old`` had in another order: applying it gives the same state, key
    order included).
    """
    added: dict[str, Any] = {}
    replaced: dict[str, Any] = {}
    get, tails = old.get, appended
    for key in keys:
        value = new[key]
        before = get(key, _MISSING)
        if before is value:
            continue
        kind = type(value)
        if kind in _ATOMS and kind is type(before):  # the common change: JSON equality is ==
            if before != value:
                replaced[key] = value
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


def merge(steps: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One delta doing what ``steps`` (deltas, oldest first) do one after the other:
    ``apply(state, merge([a, b])) == apply(apply(state, a), b)``, key order included.
    A key appended to and then set keeps only the value set; a key set (or added) and
    then appended to is set to the value with the tail. The inputs are not changed."""
    added: dict[str, list[Any]] = {}
    replaced: dict[str, Any] = {}
    for step in steps:  # (a skip merges ``every`` deltas: kept lean)
        tails = step.get("append")
        if tails:
            for key, tail in tails.items():
                if key in replaced:
                    replaced[key] = [*replaced[key], *tail]
                elif key in added:
                    added[key].extend(tail)  # a list made here: nobody else holds it
                else:
                    added[key] = list(tail)
        values = step.get("set")
        if values:
            if added:
                for key in values:
                    added.pop(key, None)
            replaced.update(values)
    delta: dict[str, Any] = {}
    if added:
        delta["append"] = added
    if replaced:
        delta["set"] = replaced
    return delta


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """How a run's chain is cut (see :mod:`agentnb.store.chains`).

    * An **anchor** once ``every`` deltas follow the last one, or they pass ``max_bytes``
      of JSON: loading a step reads fewer than ``every`` deltas, then anchors.
    * The anchor is a **skip** (the delta from the anchor before, so loading jumps over
      the steps between) unless a **snapshot** is due: the skips since the last snapshot
      set more bytes of values (later replaced, so read for nothing) than they and the
      snapshot hold otherwise; or there are ``every`` of them and they weigh as much as
      the snapshot, so snapshots of a growing state grow geometrically and the file
      stays linear in what changed.
    """

    every: int = 100
    max_bytes: int = 256 * 1024

    def anchor_due(self, deltas: int, size: int) -> bool:
        """``deltas`` deltas of ``size`` bytes follow the last anchor: is this step one?"""
        return deltas >= self.every or size >= self.max_bytes

    def snapshot_due(self, skips: int, kept: int, replaced: int, base: int) -> bool:
        """After ``skips`` skips (this one included) appending ``kept`` and setting
        ``replaced`` bytes since a snapshot of ``base`` bytes: is this anchor a snapshot?"""
        if replaced >= base + kept:
            return True
        return skips >= self.every and kept + replaced >= base


_MISSING = object()
_ATOMS = frozenset({str, int, float, bool})


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
