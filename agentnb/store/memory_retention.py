"""The memory checkpointer's retention: deleting runs (rules: :mod:`agentnb.store.retention`).

Functions on a :class:`~agentnb.store.memory.MemoryCheckpointer`'s tables, each taking its
lock: a run is checked and deleted under it, as the SQL stores do in one transaction.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from agentnb.store.records import Status
from agentnb.store.retention import Pruned, check_deletable, cutoff, prunable_statuses, selected

if TYPE_CHECKING:
    from agentnb.store.memory import MemoryCheckpointer

__all__ = ["delete_run", "prune"]


def delete_run(
    store: MemoryCheckpointer, run_id: str, include_audit: bool, awaiting: bool = False
) -> Pruned:
    with store._lock:
        check_deletable(store._get(run_id), awaiting=awaiting)
        return Pruned((run_id,), _delete(store, run_id, include_audit))


def prune(
    store: MemoryCheckpointer,
    before: float | datetime.datetime,
    status: Status | str | None,
    include_audit: bool,
) -> Pruned:
    until = cutoff(before)
    statuses = prunable_statuses(status)
    with store._lock:
        store._check_open()
        chosen = sorted(
            (r for r in store._runs.values() if selected(r, statuses, until)),
            key=lambda r: r.created_at,
        )
        audit = sum(_delete(store, r.run_id, include_audit) for r in chosen)
        if include_audit:  # and the audit kept by earlier prunes, now old enough
            kept = [d for d in store._decisions if d.at >= until or d.run_id in store._runs]
            audit += len(store._decisions) - len(kept)
            store._decisions = kept
    return Pruned(tuple(r.run_id for r in chosen), audit)


def _delete(store: MemoryCheckpointer, run_id: str, include_audit: bool) -> int:
    """Delete ``run_id`` (the caller holds the lock and has checked it)."""
    del store._runs[run_id]
    for per_run in (store._checkpoints, store._events, store._policies, store._held):
        per_run.pop(run_id, None)
    for write in [k for k in store._writes if k[0] == run_id]:
        del store._writes[write]
    for key in [k for k, (effect, _) in store._effects.items() if effect.run_id == run_id]:
        del store._effects[key]
    if not include_audit:
        return 0
    kept = [d for d in store._decisions if d.run_id != run_id]
    deleted = len(store._decisions) - len(kept)
    store._decisions = kept
    return deleted
