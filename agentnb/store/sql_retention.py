"""The SQL checkpointers' retention: deleting a run's rows.

The rules are :mod:`agentnb.store.retention`'s. Each run is deleted in one write
transaction of the caller's (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: under the run's
lock), after :func:`~agentnb.store.retention.check_deletable` has seen its row under the
write lock — so a worker taking the lease, or an approver deciding, in another process,
is either before the check (and the run is refused) or after the delete (and finds no run).
"""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from agentnb.errors import RunActive, RunNotFound
from agentnb.store.dialect import clock
from agentnb.store.records import RunRecord, Status
from agentnb.store.retention import check_deletable, cutoff, prunable_statuses, selected
from agentnb.store.sql_decisions import get_run
from agentnb.store.sql_rows import RUN_SELECT

__all__ = [
    "AUDIT_TABLES",
    "RUN_TABLES",
    "delete",
    "delete_orphan_audit",
    "prune",
    "prune_candidates",
]

RUN_TABLES = (
    "entries",
    "run_policies",
    "effects",
    "pending_writes",
    "pending_tasks",
)
"""Tables of per-run data (a ``run_id`` column) deleted with the run.

A table added by a later migration must be named here or in :data:`AUDIT_TABLES`: a test
fails until it is."""
AUDIT_TABLES = ("decisions", "decision_edits")
"""The append-only decision audit: kept, unless a retention asks for it explicitly."""


def delete(
    db: sqlite3.Connection,
    run_id: str,
    *,
    include_audit: bool,
    now: float | None = None,
    awaiting: bool = False,
) -> int:
    """Delete ``run_id`` in the caller's transaction; return the audit rows deleted.
    Whether its lease is live is decided at ``now`` (default: the database's clock).

    Raises :class:`~agentnb.errors.RunNotFound` or :class:`~agentnb.errors.RunActive`
    before anything is deleted.
    """
    check_deletable(get_run(db, run_id), clock(db) if now is None else now, awaiting=awaiting)
    # The run's row first: the audit's triggers refuse to delete the audit of a run
    # that still exists.
    db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
    for table in RUN_TABLES:
        db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))
    if not include_audit:
        return 0
    ids = [i for (i,) in db.execute("SELECT id FROM decisions WHERE run_id = ?", (run_id,))]
    deleted = db.execute("DELETE FROM decisions WHERE run_id = ?", (run_id,)).rowcount
    if ids:
        db.executemany("DELETE FROM decision_edits WHERE decision_id = ?", [(i,) for i in ids])
    return int(deleted)


def delete_orphan_audit(db: sqlite3.Connection, before: float) -> int:
    """Delete audit rows older than ``before`` whose run no longer exists (it was deleted
    earlier by a retention that kept its audit); return how many."""
    ids = [
        (i,)
        for (i,) in db.execute(
            "SELECT id FROM decisions WHERE at < ? AND run_id NOT IN (SELECT run_id FROM runs)",
            (before,),
        )
    ]
    db.executemany("DELETE FROM decisions WHERE id = ?", ids)
    if ids:
        db.executemany("DELETE FROM decision_edits WHERE decision_id = ?", ids)
    return len(ids)


def prune_candidates(
    read: Callable[[str, Sequence[Any]], list[Any]],
    before: float | datetime.datetime,
    status: Status | str | None,
) -> tuple[list[str], tuple[Status, ...], float]:
    """The ids a prune considers (oldest first), its statuses and its cutoff, read by
    ``read`` (the store's own read, outside any write transaction)."""
    until = cutoff(before)
    statuses = prunable_statuses(status)
    marks = ", ".join("?" for _ in statuses)
    rows = read(
        f"{RUN_SELECT} WHERE r.status IN ({marks}) AND r.status_at < ? ORDER BY r.created_at",
        (*(str(s) for s in statuses), until),
    )
    return [row[0] for row in rows], statuses, until


def prune(
    write: Callable[[str | None], AbstractContextManager[sqlite3.Connection]],
    get: Callable[[sqlite3.Connection, str], RunRecord],
    run_ids: Sequence[str],
    statuses: Sequence[Status],
    until: float,
    *,
    include_audit: bool,
) -> tuple[list[str], int]:
    """Delete each of ``run_ids`` still :func:`~agentnb.store.retention.selected`; the ids
    deleted and the audit rows deleted.

    ``write(run_id)`` opens one transaction for that run (``write(None)``: for the orphan
    audit); the choice is made again inside it, so a run continued or decided since
    :func:`prune_candidates` read it is left alone.
    """
    deleted: list[str] = []
    audit = 0
    for run_id in run_ids:
        with write(run_id) as db:
            try:
                found = get(db, run_id)
            except RunNotFound:
                continue
            now = clock(db)  # a live lease is one by the database's clock
            if not selected(found, statuses, until, now):
                continue
            try:
                audit += delete(db, run_id, include_audit=include_audit, now=now)
            except (RunNotFound, RunActive):
                continue
        deleted.append(run_id)
    if include_audit:
        with write(None) as db:
            audit += delete_orphan_audit(db, until)
    return deleted, audit
