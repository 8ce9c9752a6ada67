"""The SQLite checkpointer's claims: one ``UPDATE ... RETURNING`` under ``BEGIN IMMEDIATE``.

The rule is :mod:`agentnb.store.claims`'. The write lock taken up front makes the choice
and the lease one step, so two processes never claim the same run; PostgreSQL says the
same with ``FOR UPDATE SKIP LOCKED`` in the inner ``SELECT``. Both conditions are served by
the partial indexes of migration 0009 (free waiting runs by age, held runs by expiry).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence

from agentnb.store.claims import graph_filter
from agentnb.store.records import RunRecord
from agentnb.store.sqlite_rows import RUN_SELECT
from agentnb.store.sqlite_rows import run as run_row

__all__ = ["claim", "requeue"]

_CLAIMABLE = (
    "((lease_owner IS NULL AND status IN ('queued', 'approved')) OR (lease_owner IS NOT NULL "
    "AND lease_expires <= ? AND status IN ('queued', 'approved', 'running')))"
)


def claim(
    db: sqlite3.Connection,
    owner: str,
    graphs: Mapping[str, str],
    *,
    limit: int,
    lease_seconds: float,
    run_ids: Sequence[str] | None,
) -> list[RunRecord]:
    """Claim inside the caller's write transaction; the claimed rows, oldest first."""
    if limit < 1 or not graphs or (run_ids is not None and not run_ids):
        return []
    now = time.time()
    where, params = graph_filter(graphs)
    if run_ids is not None:
        where += f" AND run_id IN ({', '.join('?' for _ in run_ids)})"
        params += list(run_ids)
    claimed = db.execute(
        "UPDATE runs SET lease_owner = ?, lease_expires = ?, fence = fence + 1 "
        f"WHERE run_id IN (SELECT run_id FROM runs WHERE {where} AND {_CLAIMABLE} "
        "ORDER BY status_at, run_id LIMIT ?) RETURNING run_id",
        (owner, now + lease_seconds, *params, now, limit),
    ).fetchall()
    if not claimed:
        return []
    ids = [r[0] for r in claimed]
    rows = db.execute(
        f"{RUN_SELECT} WHERE r.run_id IN ({', '.join('?' for _ in ids)}) "
        "ORDER BY r.status_at, r.run_id",
        ids,
    ).fetchall()
    return [run_row(r) for r in rows]


def requeue(db: sqlite3.Connection, run_id: str, fence: int) -> bool:
    """Back to ``queued`` if nobody holds the run and ``fence`` is still its latest."""
    changed = db.execute(
        "UPDATE runs SET status = 'queued', status_at = ? WHERE run_id = ? AND fence = ? "
        "AND lease_owner IS NULL AND status = 'running'",
        (time.time(), run_id, fence),
    ).rowcount
    return bool(changed)
