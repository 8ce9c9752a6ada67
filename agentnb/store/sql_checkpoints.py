"""The SQLite checkpointer's checkpoint rows: written as snapshots or deltas, read back
through :mod:`agentnb.store.chains`.

A checkpoint is a journal entry (``entries``) whose ``state`` is not NULL: ``kind`` says
whether ``state`` holds the whole state (``snapshot``; NULL for an entry written by a
decision's edit or before migration 0008) or a delta from the step before. Loading one
step walks the covering index ``entries_chain`` back to the nearest snapshot (a chain
bounded by :class:`~agentnb.store.deltas.SnapshotPolicy`) and reads only those bodies.

Functions on an open connection, called inside :class:`SqliteCheckpointer`'s locks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from agentnb._json import dumps, loads
from agentnb.errors import StoreError
from agentnb.store import chains, deltas
from agentnb.store.chains import Chain
from agentnb.store.history import CheckpointInfo
from agentnb.store.records import Checkpoint

__all__ = ["checkpoint", "checkpoints", "convert", "infos", "state"]

_CHAIN = (
    "SELECT step, seq, kind FROM entries INDEXED BY entries_chain WHERE run_id = ? "
    "AND state IS NOT NULL{bound} ORDER BY step DESC, seq DESC"
)


def _chain(db: sqlite3.Connection, run_id: str, step: int | None) -> list[tuple[int, int]]:
    """``(step, seq)`` of the rows that make up ``step`` (default: the latest), newest
    first, down to its snapshot; empty when there is no checkpoint at ``step``."""
    sql = _CHAIN.format(bound="" if step is None else " AND step <= ?")
    cursor = db.execute(sql, (run_id,) if step is None else (run_id, step))
    try:
        return chains.links(cursor, step)
    finally:
        cursor.close()


def _rows(
    db: sqlite3.Connection, run_id: str, chain: list[tuple[int, int]]
) -> Iterator[tuple[int, str | None, str]]:
    # One range scan of the primary key (the chain's entries are consecutive in seq but
    # for a decision's entries between them), rather than a lookup per row.
    wanted = {seq for _, seq in chain}
    bodies = {
        seq: (kind, body)
        for seq, kind, body in db.execute(
            "SELECT seq, kind, state FROM entries WHERE run_id = ? AND seq BETWEEN ? AND ? "
            "AND state IS NOT NULL",
            (run_id, chain[-1][1], chain[0][1]),
        )
        if seq in wanted
    }
    for at, seq in chain:
        kind, body = bodies[seq]
        yield at, kind, body


def checkpoint(db: sqlite3.Connection, run_id: str, step: int | None) -> Checkpoint | None:
    """The checkpoint after ``step`` nodes (default: the latest), or ``None``."""
    chain = _chain(db, run_id, step)
    if not chain:
        return None
    at_step, seq = chain[0]
    node, at, tasks = db.execute(
        "SELECT node, at, tasks FROM entries WHERE run_id = ? AND seq = ?", (run_id, seq)
    ).fetchone()
    value = chains.rebuild(_rows(db, run_id, chain))
    return Checkpoint(run_id, at_step, node, value, at, loads(tasks) if tasks else None)


def state(db: sqlite3.Connection, run_id: str) -> dict[str, object]:
    """The run's latest state (the run has a checkpoint: it was created with one)."""
    chain = _chain(db, run_id, None)
    if not chain:
        raise StoreError(f"run {run_id!r} has no checkpoint")
    return chains.rebuild(_rows(db, run_id, chain))


def checkpoints(db: sqlite3.Connection, run_id: str) -> list[Checkpoint]:
    """Every checkpoint of the run, oldest first (one read of the run's rows)."""
    rows = db.execute(
        "SELECT step, node, kind, state, at, tasks FROM entries WHERE run_id = ? "
        "AND state IS NOT NULL ORDER BY seq",
        (run_id,),
    ).fetchall()
    latest = {s: (node, kind, body, at, t) for s, node, kind, body, at, t in rows}
    ordered = sorted(latest.items())
    states = chains.rebuild_all([(s, kind, body) for s, _, kind, body, _, _ in rows])
    return [
        Checkpoint(run_id, s, node, value, at, loads(t) if t else None)
        for (s, (node, _, _, at, t)), value in zip(ordered, states, strict=True)
    ]


def infos(db: sqlite3.Connection, run_id: str) -> list[CheckpointInfo]:
    """Every checkpoint's step, node and time, from one scan of the index (no body read)."""
    rows = db.execute(
        "SELECT step, node, at FROM entries INDEXED BY entries_chain "
        "WHERE run_id = ? AND state IS NOT NULL ORDER BY step, seq",
        (run_id,),
    ).fetchall()
    latest = {s: (node, at) for s, node, at in rows}  # the last entry of a step saved twice
    return [CheckpointInfo(run_id, s, node, at) for s, (node, at) in latest.items()]


def convert(db: sqlite3.Connection) -> None:
    """Migration 0008's Python step: every run's full-state checkpoints become a chain.

    For each run, in a savepoint of its own: the latest entry of each step, in step order,
    is kept as a snapshot (the first, and wherever :func:`~agentnb.store.deltas.diff` has
    no delta or the policy asks for one) or rewritten as the delta computed from the two
    full states alone (no reducer is involved). Each rewritten step is rebuilt from the
    rows before it and compared with its stored JSON, byte for byte, before the next one;
    a run whose rebuild differs anywhere, or whose steps are not consecutive, is rolled
    back to its savepoint and keeps every checkpoint whole. One state (and the one before
    it) is in memory at a time, so a long run converts in constant memory.
    """
    runs = [r for (r,) in db.execute("SELECT run_id FROM runs ORDER BY run_id")]
    for run_id in runs:
        db.execute("SAVEPOINT convert_run")
        try:
            if _convert_run(db, run_id):
                db.execute("RELEASE convert_run")
                continue
        except BaseException:
            db.execute("ROLLBACK TO convert_run")
            db.execute("RELEASE convert_run")
            raise
        db.execute("ROLLBACK TO convert_run")
        db.execute("RELEASE convert_run")


def _convert_run(db: sqlite3.Connection, run_id: str) -> bool:
    """Rewrite one run's chain; False when any step would not come back exactly."""
    latest: dict[int, int] = {}
    for step, seq in db.execute(
        "SELECT step, seq FROM entries WHERE run_id = ? AND state IS NOT NULL ORDER BY seq",
        (run_id,),
    ).fetchall():
        latest[step] = seq
    steps = sorted(latest)
    if not steps or steps != list(range(steps[0], steps[0] + len(steps))):
        return not steps  # nothing to convert; or a gap: kept whole
    previous: dict[str, Any] | None = None  # the state of the step before, as stored
    chain = Chain()
    for step in steps:
        seq = latest[step]
        (text,) = db.execute(
            "SELECT state FROM entries WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
        current: dict[str, Any] = loads(text)
        delta_json: str | None = None
        if previous is not None:
            delta_json, chain = chain.next(previous, current)
        if delta_json is None:
            chain = Chain.after(text)
            db.execute(
                "UPDATE entries SET kind = ? WHERE run_id = ? AND seq = ?",
                (chains.SNAPSHOT, run_id, seq),
            )
        else:
            assert previous is not None
            rebuilt = deltas.apply(previous, loads(delta_json))
            if dumps(rebuilt) != text:
                return False
            db.execute(
                "UPDATE entries SET kind = ?, state = ? WHERE run_id = ? AND seq = ?",
                (chains.DELTA, delta_json, run_id, seq),
            )
        previous = current
    return True
