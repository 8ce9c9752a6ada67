"""The SQL checkpointers' claims: one ``UPDATE ... RETURNING`` in a write transaction.

The rule is :mod:`agentnb.store.claims`'. The write lock taken up front makes the choice
and the lease one step, so two processes never claim the same run; PostgreSQL says the
same with ``FOR UPDATE SKIP LOCKED`` in each inner ``SELECT``. The two conditions are read
apart, each through its partial index of migration 0009 (free waiting runs by age, held
runs by expiry) and merged oldest first (:func:`candidates`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from agentnb.store.claims import TimerClaim, graph_filter
from agentnb.store.dialect import Statement
from agentnb.store.records import RunRecord
from agentnb.store.sql_rows import RUN_SELECT
from agentnb.store.sql_rows import run as run_row

__all__ = [
    "candidate_params",
    "candidates",
    "claim",
    "claim_timers",
    "release_timers",
    "renew",
    "requeue",
    "update",
]

# A claimable run is one of two kinds, each read through its own partial index of
# migration 0009 (in order, so the LIMIT stops the read): free and waiting, oldest first
# (``runs_waiting``); or held on a lease that ran out (``runs_by_lease``). Written as one
# condition with OR, neither index applies and every claim sorts the whole queue — under
# the write lock, so with 2,000 runs queued each claim held every other worker off ~2 ms.
_WAITING = "lease_owner IS NULL AND status IN ('queued', 'approved')"
_EXPIRED = (
    "lease_owner IS NOT NULL AND lease_expires <= ? AND status IN ('queued', 'approved', 'running')"
)


def candidates(where: str, *, lock: str = "", indexed: bool = False) -> str:
    """The ``SELECT`` of up to ``?`` claimable runs of ``where`` (both kinds, oldest first);
    its parameters: :func:`candidate_params`. ``lock`` ends each inner read (PostgreSQL:
    ``FOR UPDATE SKIP LOCKED``); ``indexed`` names SQLite's partial indexes (its planner,
    without statistics, prefers the status index and sorts the queue; ``INDEXED BY`` also
    makes the statement fail to prepare if an index could not serve it)."""
    waiting = "runs INDEXED BY runs_waiting" if indexed else "runs"
    expired = "runs INDEXED BY runs_by_lease" if indexed else "runs"
    # By status_at alone inside, the order of the waiting index, so the read stops at the
    # LIMIT (PostgreSQL's index has no run_id: a tie-break there would sort the queue);
    # the outer ORDER BY breaks ties among the few picked.
    order = "ORDER BY status_at LIMIT ?"
    return (
        f"SELECT run_id FROM (SELECT * FROM (SELECT run_id, status_at FROM {waiting} WHERE "
        f"{where} AND {_WAITING} {order}{lock}) w UNION ALL SELECT * FROM (SELECT run_id, "
        f"status_at FROM {expired} WHERE {where} AND {_EXPIRED} {order}{lock}) e) u "
        "ORDER BY status_at, run_id LIMIT ?"
    )


def candidate_params(params: Sequence[Any], now: float, limit: int) -> tuple[Any, ...]:
    """The parameters of :func:`candidates` for ``where``'s ``params``."""
    return (*params, limit, *params, now, limit, limit)


def update(
    where: str, params: Sequence[Any], now: float, limit: int, owner: str, expires: float
) -> tuple[str, tuple[Any, ...]]:
    """SQLite's claim: the write lock taken up front already excludes other claims."""
    return (
        "UPDATE runs SET lease_owner = ?, lease_expires = ?, fence = fence + 1 "
        f"WHERE run_id IN ({candidates(where, indexed=True)}) RETURNING run_id",
        (owner, expires, *candidate_params(params, now, limit)),
    )


def claim(
    db: sqlite3.Connection,
    owner: str,
    graphs: Mapping[str, str],
    *,
    limit: int,
    lease_seconds: float,
    run_ids: Sequence[str] | None,
    statement: Statement = update,
) -> list[RunRecord]:
    """Claim inside the caller's write transaction; the claimed rows, oldest first.

    The runs of ``graphs`` (among ``run_ids`` if given) waiting or with an expired lease,
    leased by ``statement`` (:func:`update`, or PostgreSQL's).
    """
    if limit < 1 or not graphs or (run_ids is not None and not run_ids):
        return []
    now = time.time()
    where, params = graph_filter(graphs)
    if run_ids is not None:
        where += f" AND run_id IN ({', '.join('?' for _ in run_ids)})"
        params += list(run_ids)
    sql, args = statement(where, params, now, limit, owner, now + lease_seconds)
    claimed = db.execute(sql, args).fetchall()
    if not claimed:
        return []
    ids = [r[0] for r in claimed]
    rows = db.execute(
        f"{RUN_SELECT} WHERE r.run_id IN ({', '.join('?' for _ in ids)}) "
        "ORDER BY r.status_at, r.run_id",
        ids,
    ).fetchall()
    return [run_row(r) for r in rows]


def renew(
    db: sqlite3.Connection, owner: str, run_ids: Sequence[str], lease_seconds: float
) -> list[str]:
    """Extend ``owner``'s leases on ``run_ids``; the ids it still held."""
    if not run_ids:
        return []
    rows = db.execute(
        "UPDATE runs SET lease_expires = ? WHERE lease_owner = ? "
        f"AND run_id IN ({', '.join('?' for _ in run_ids)}) RETURNING run_id",
        (time.time() + lease_seconds, owner, *run_ids),
    ).fetchall()
    return [r[0] for r in rows]


def requeue(db: sqlite3.Connection, run_id: str, fence: int) -> bool:
    """Back to ``queued`` if nobody holds the run and ``fence`` is still its latest."""
    changed = db.execute(
        "UPDATE runs SET status = 'queued', status_at = ? WHERE run_id = ? AND fence = ? "
        "AND lease_owner IS NULL AND status = 'running'",
        (time.time(), run_id, fence),
    ).rowcount
    return bool(changed)


def claim_timers(
    db: sqlite3.Connection,
    owner: str,
    machines: Sequence[str],
    *,
    limit: int,
    lease_seconds: float,
    now: float | None,
) -> list[TimerClaim]:
    """Lease instances with a due timer inside the caller's write transaction."""
    if limit < 1 or not machines:
        return []
    leased = time.time()
    moment = leased if now is None else now
    marks = ", ".join("?" for _ in machines)
    claimed = db.execute(
        "INSERT INTO machine_leases (instance_id, owner, expires) "
        "SELECT d.instance_id, ?, ? FROM (SELECT t.instance_id, min(t.fire_at) AS due "
        "FROM machine_timers t JOIN machine_instances i ON i.instance_id = t.instance_id "
        f"WHERE i.machine IN ({marks}) GROUP BY t.instance_id HAVING min(t.fire_at) <= ?) d "
        "WHERE NOT EXISTS (SELECT 1 FROM machine_leases l WHERE l.instance_id = d.instance_id "
        "AND l.expires > ?) ORDER BY d.due, d.instance_id LIMIT ? "
        "ON CONFLICT (instance_id) DO UPDATE SET owner = excluded.owner, "
        "expires = excluded.expires RETURNING instance_id",
        (owner, leased + lease_seconds, *machines, moment, leased, limit),
    ).fetchall()
    if not claimed:
        return []
    ids = [r[0] for r in claimed]
    rows = db.execute(
        "SELECT i.instance_id, i.machine, min(t.fire_at) FROM machine_instances i "
        "JOIN machine_timers t ON t.instance_id = i.instance_id "
        f"WHERE i.instance_id IN ({', '.join('?' for _ in ids)}) "
        "GROUP BY i.instance_id ORDER BY min(t.fire_at), i.instance_id",
        ids,
    ).fetchall()
    return [
        TimerClaim(iid, machine, due, owner, leased + lease_seconds) for iid, machine, due in rows
    ]


def release_timers(db: sqlite3.Connection, instance_id: str, owner: str) -> None:
    db.execute(
        "DELETE FROM machine_leases WHERE instance_id = ? AND owner = ?", (instance_id, owner)
    )
