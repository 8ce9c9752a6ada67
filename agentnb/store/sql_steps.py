"""The SQL checkpointer's step statements: a run created, a lease taken, a step committed.

Functions on an open connection, called inside the write transactions of
:class:`~agentnb.store.sql.SqlCheckpointer`, in the SQL both engines speak. The
statements are built once: a driver finds its prepared statement by the text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from agentnb._json import dumps
from agentnb.errors import LeaseLost, RunBusy, RunNotFound, StoreError
from agentnb.identity import Identity
from agentnb.store import chains
from agentnb.store.dialect import NOW
from agentnb.store.leases import owner_is_dead
from agentnb.store.policy import ApproverPolicy
from agentnb.store.records import Event, PendingWrite, RunRecord, Status
from agentnb.store.sql_rows import ENTRY, pack
from agentnb.store.sql_tasks import settle
from agentnb.store.writes import CheckpointWrite, StepCommit

__all__ = [
    "FENCED_ENTRY",
    "FENCED_UNTASKED_ENTRY",
    "acquire",
    "commit",
    "create_run",
    "entry",
    "plain",
    "release",
    "save_write",
]

FENCED_ENTRY = (
    f"{ENTRY} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE run_id = ? AND fence = ? "
    f"AND lease_owner IS NOT NULL AND status = 'running' AND lease_expires > {NOW} + ?"
)
"""The common step's one statement: its entry, if ``fence`` holds the lease with more than
half of it left on the database's clock (parameters: the entry's, then run id, fence,
and half the lease).
The entry is selected *from* the run's row (its key: one row or none), not guarded by
``WHERE EXISTS``, which SQLite runs as a subprogram of its own (callgrind, the statement
alone: 79k -> 70k instructions; issue #13)."""
FENCED_UNTASKED_ENTRY = (
    f"{ENTRY} SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8 FROM runs WHERE run_id = ?1 "
    "AND fence = ?9 AND lease_owner IS NOT NULL AND status = 'running' "
    f"AND lease_expires > {NOW} + ?10"
)
""":data:`FENCED_ENTRY` for an entry with no superstep tasks (a linear step's), in
SQLite's numbered parameters: the entry's but ``tasks``, then fence and half the
lease. Each parameter Python's sqlite3 binds costs ~500 instructions, and more for one
that is not a plain ``int``, ``float``, ``str`` or ``bytes`` (``None`` too: a failing
lookup of ``__adapt__`` and ``__conform__``): the ``NULL`` is written in the statement,
and the run id, the entry's first value, is bound once (callgrind: ~3.5k instructions a
step less)."""
_ENTRY_VALUES = f"{ENTRY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_RUNNING = Status.RUNNING
"""(a module's name: reading an enum's member through its class costs ~200 instructions)"""
_LEASE = (
    f"UPDATE runs SET lease_owner = ?, lease_expires = {NOW} + ?, fence = fence + 1 "
    "WHERE run_id = ?"
)
_SAVE_WRITE = (
    "INSERT INTO pending_writes SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS "
    "(SELECT 1 FROM runs WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL) "
    "ON CONFLICT DO NOTHING"
)
Entry = tuple[Any, ...]
"""A journal entry's values, in the column order of :data:`ENTRY`."""


def create_run(
    db: sqlite3.Connection,
    run: RunRecord,
    checkpoint: CheckpointWrite,
    events: Sequence[Event],
    *,
    started_by: Identity | None,
    policies: Mapping[str, ApproverPolicy] | None,
    duplicate: tuple[type[Exception], ...],
) -> None:
    """Insert the run, its first checkpoint (always a snapshot) and its policy; an id that
    exists (the driver raises one of ``duplicate``) is a :class:`StoreError`."""
    try:
        db.execute(
            "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, "
            "status_at, fence) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
            (
                run.run_id,
                run.graph,
                run.shape,
                str(run.status),
                run.max_steps,
                run.created_at,
                run.created_at,
            ),
        )
    except duplicate:
        raise StoreError(f"a run with id {run.run_id!r} already exists; pick a new id") from None
    db.execute(
        _ENTRY_VALUES,
        (
            run.run_id,
            events[-1].seq,
            checkpoint.step,
            checkpoint.node,
            checkpoint.state_json,
            pack(events),
            run.created_at,
            checkpoint.tasks_json,
            chains.SNAPSHOT,  # a run's first checkpoint: never a delta
        ),
    )
    if started_by is not None or policies:
        db.execute(
            "INSERT INTO run_policies VALUES (?, ?, ?)",
            (
                run.run_id,
                None if started_by is None else dumps(started_by.to_json()),
                dumps({k: p.to_json() for k, p in (policies or {}).items()}),
            ),
        )


def acquire(db: sqlite3.Connection, run_id: str, owner: str, lease_seconds: float) -> None:
    """Take the run's lease (free, expired, ``owner``'s, or a dead process's); else
    :class:`RunBusy` or :class:`RunNotFound`. Expired and the new end: the database's
    clock."""
    # The claim is a conditional update: free, expired or already ours.
    claimed = db.execute(
        f"UPDATE runs SET lease_owner = ?, lease_expires = {NOW} + ?, fence = fence + 1 "
        "WHERE run_id = ? AND (lease_owner IS NULL OR lease_owner = ? "
        f"OR lease_expires <= {NOW})",
        (owner, lease_seconds, run_id, owner),
    ).rowcount
    if claimed:
        return
    row = db.execute(
        "SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None:
        raise RunNotFound(run_id)
    holder, expires = row
    if not owner_is_dead(holder):
        raise RunBusy(run_id, holder, expires)
    db.execute(_LEASE, (owner, lease_seconds, run_id))


def entry(run_id: str, change: StepCommit, now: float) -> Entry:
    """The journal entry a step writes (built before its transaction opens)."""
    events = change.events
    if not events:
        raise StoreError("a commit must carry at least one event")
    cp = change.checkpoint
    kind, body = (None, None) if cp is None else chains.row(cp)
    tasks = None if cp is None else cp.tasks_json
    packed = pack(events)
    return (run_id, events[-1].seq, change.step, change.node, body, packed, now, tasks, kind)


def plain(change: StepCommit) -> bool:
    """Whether ``change`` is the common step: the run stays running with its lease, and no
    superstep table changes — so :data:`FENCED_ENTRY` alone writes it while the lease has
    more than half its time left."""
    return (
        change.status == _RUNNING
        and not change.release
        and change.settles is None
        and not change.holds
    )


def commit(
    db: sqlite3.Connection,
    run_id: str,
    fence: int,
    change: StepCommit,
    row: Entry,
    *,
    now: float,
    lease_seconds: float,
    tried: bool = False,
) -> None:
    """Apply one step if ``fence`` still owns the run; else :class:`LeaseLost`. ``now``
    is the step's time as recorded; the lease is renewed on the database's clock.
    ``tried``: the fast path's statement already wrote nothing (SQLite's commit tries it
    alone first), so the run's row is updated straight away."""
    # Fast path, the common step: the run stays running and the lease has more than half
    # its time left, so the run's row does not change — one INSERT, fenced by a read of it.
    if change.status == _RUNNING and not change.release and not tried:
        inserted = db.execute(FENCED_ENTRY, (*row, run_id, fence, lease_seconds / 2))
        if inserted.rowcount:
            settle(db, run_id, change)
            return
    updated = db.execute(
        "UPDATE runs SET status = ?, status_at = ?, error = ?, pending_digest = ?, "
        "lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END, "
        f"lease_expires = CASE WHEN ? THEN NULL ELSE {NOW} + ? END "
        "WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL",
        (
            str(change.status),
            now,
            None if change.error is None else dumps(change.error),
            change.pending_digest,
            change.release,
            change.release,
            lease_seconds,
            run_id,
            fence,
        ),
    ).rowcount
    if not updated:
        raise LeaseLost(run_id, fence)
    db.execute(_ENTRY_VALUES, row)
    settle(db, run_id, change)


def save_write(db: sqlite3.Connection, run_id: str, fence: int, write: PendingWrite) -> None:
    """Save a finished task's result once, if ``fence`` still owns the run; else
    :class:`LeaseLost`."""
    inserted = db.execute(
        _SAVE_WRITE,
        (
            run_id,
            write.step,
            write.task_id,
            write.node,
            dumps(write.delta),
            pack(write.events),
            write.at,
            run_id,
            fence,
        ),
    ).rowcount
    if (
        not inserted
        and not db.execute(
            "SELECT 1 FROM runs WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL",
            (run_id, fence),
        ).fetchone()
    ):
        raise LeaseLost(run_id, fence)


def release(db: sqlite3.Connection, run_id: str, fence: int) -> None:
    db.execute(
        "UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = ? AND fence = ?",
        (run_id, fence),
    )
