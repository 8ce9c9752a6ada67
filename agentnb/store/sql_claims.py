"""The SQL checkpointers' claims: one ``UPDATE ... RETURNING`` in a write transaction.

The rule is :mod:`agentnb.store.claims`'. The write lock taken up front makes the choice
and the lease one step, so two processes never claim the same run; PostgreSQL says the
same with ``FOR UPDATE SKIP LOCKED`` in each inner ``SELECT``. The two conditions are read
apart, each through its partial index of migration 0009 (free waiting runs by age, held
runs by expiry) and merged oldest first (:func:`candidates`).

Whether a lease has expired, and when a new or renewed one ends, is the database's clock
(:data:`~agentnb.store.dialect.NOW`, in each statement), never the claiming process's: a
worker whose clock runs an hour ahead does not take over a run another still drives, and
one whose clock runs behind does not write a lease that is over as it is taken.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any

from agentnb.store.claims import TimerClaim, graph_filter
from agentnb.store.dialect import NOW, Statement
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
    f"lease_owner IS NOT NULL AND lease_expires <= {NOW} "
    "AND status IN ('queued', 'approved', 'running')"
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


def candidate_params(params: Sequence[Any], limit: int) -> tuple[Any, ...]:
    """The parameters of :func:`candidates` for ``where``'s ``params``."""
    return (*params, limit, *params, limit, limit)


def update(
    where: str, params: Sequence[Any], limit: int, owner: str, lease_seconds: float
) -> tuple[str, tuple[Any, ...]]:
    """SQLite's claim: the write lock taken up front already excludes other claims."""
    return (
        f"UPDATE runs SET lease_owner = ?, lease_expires = {NOW} + ?, fence = fence + 1 "
        f"WHERE run_id IN ({candidates(where, indexed=True)}) RETURNING run_id",
        (owner, lease_seconds, *candidate_params(params, limit)),
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
    where, params = graph_filter(graphs)
    if run_ids is not None:
        where += f" AND run_id IN ({', '.join('?' for _ in run_ids)})"
        params += list(run_ids)
    sql, args = statement(where, params, limit, owner, lease_seconds)
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
    """Extend ``owner``'s leases on ``run_ids`` to ``lease_seconds`` from now (the
    database's clock); the ids it still held."""
    if not run_ids:
        return []
    rows = db.execute(
        f"UPDATE runs SET lease_expires = {NOW} + ? WHERE lease_owner = ? "
        f"AND run_id IN ({', '.join('?' for _ in run_ids)}) RETURNING run_id",
        (lease_seconds, owner, *run_ids),
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
    """Lease instances with a due timer inside the caller's write transaction.

    Due at ``now``, or by default at the database's time; the lease is free or expired,
    and taken for ``lease_seconds``, on the database's clock either way."""
    if limit < 1 or not machines:
        return []
    marks = ", ".join("?" for _ in machines)
    claimed = db.execute(
        "INSERT INTO machine_leases (instance_id, owner, expires) "
        f"SELECT d.instance_id, ?, {NOW} + ? FROM (SELECT t.instance_id, min(t.fire_at) AS due "
        "FROM machine_timers t JOIN machine_instances i ON i.instance_id = t.instance_id "
        f"WHERE i.machine IN ({marks}) GROUP BY t.instance_id "
        f"HAVING min(t.fire_at) <= COALESCE(?, {NOW})) d "
        "WHERE NOT EXISTS (SELECT 1 FROM machine_leases l WHERE l.instance_id = d.instance_id "
        f"AND l.expires > {NOW}) ORDER BY d.due, d.instance_id LIMIT ? "
        "ON CONFLICT (instance_id) DO UPDATE SET owner = excluded.owner, "
        f"expires = excluded.expires RETURNING instance_id, expires, COALESCE(?, {NOW})",
        (owner, lease_seconds, *machines, now, limit, now),
    ).fetchall()
    if not claimed:
        return []
    leases = {iid: (expires, moment) for iid, expires, moment in claimed}
    rows = db.execute(
        "SELECT i.instance_id, i.machine, min(t.fire_at) FROM machine_instances i "
        "JOIN machine_timers t ON t.instance_id = i.instance_id "
        f"WHERE i.instance_id IN ({', '.join('?' for _ in leases)}) "
        "GROUP BY i.instance_id ORDER BY min(t.fire_at), i.instance_id",
        list(leases),
    ).fetchall()
    return [TimerClaim(iid, machine, due, owner, *leases[iid]) for iid, machine, due in rows]


def release_timers(db: sqlite3.Connection, instance_id: str, owner: str) -> None:
    db.execute(
        "DELETE FROM machine_leases WHERE instance_id = ? AND owner = ?", (instance_id, owner)
    )
