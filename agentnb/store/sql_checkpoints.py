"""The SQL checkpointers' checkpoint rows: written as snapshots, skips or deltas, read
back through :mod:`agentnb.store.chains`.

A checkpoint is a journal entry (``entries``) whose ``kind`` is not NULL: ``state`` holds
the whole state (``snapshot``), a delta from the step before (``delta``) or from the run's
previous anchor (``skip``). Since SQLite's migration 0012 the journal's columns are
``run_id, seq, step, kind, node, at`` (what every walk and listing reads), then ``tasks``,
``events`` and ``state`` (the bodies), and its only index besides the primary key is
``entries_anchors`` (snapshots and skips): the common step, a delta row, writes one B-tree
page. Loading one step finds the nearest anchor in ``entries_anchors`` and the anchors back
to a snapshot (about ``2 * sqrt(step)`` rows), reads the deltas since the anchor on the
primary key (fewer than :attr:`~agentnb.store.deltas.SnapshotPolicy.every`, each row up to
``kind``), then only those bodies.

What SQLite reads: ``entries`` is a WITHOUT ROWID table, a row one record of the primary
key's B-tree; a record bigger than about 1 KB keeps its first bytes in the leaf and the
rest in overflow pages. A column is read up to its end, so the small columns before the
bodies never touch the overflow. But a row's key is the whole record: a seek compares the
rows beside the key it looks for, and a range ``run_id = ?`` compares every row it passes
with the range's end, each comparison with a big row reading all of it. So SQLite's
listing is one seek with no end (:data:`_LISTING_ON`); the walks' ranges run over deltas,
small rows. PostgreSQL reads the same statements (its big values are TOASTed, out of the
row; its version 6 drops ``entries_chain`` too).

Functions on an open connection, called inside :class:`SqliteCheckpointer`'s locks.
"""

from __future__ import annotations

import itertools
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

_LATEST = "SELECT step FROM entries WHERE run_id = ? AND kind IS NOT NULL ORDER BY seq DESC LIMIT 1"
"""The latest checkpoint's step: the primary key read backwards from the run's last entry
(a step's ``step`` never decreases in ``seq``, so the latest row is the highest step)."""
_ANCHORS = (
    "SELECT step, seq, kind FROM entries INDEXED BY entries_anchors WHERE run_id = ? "
    "AND kind <> 'delta' AND step <= ? "
    "ORDER BY step DESC, seq DESC"
)
_DELTAS = (
    "SELECT step, seq, kind FROM entries WHERE run_id = ? AND seq >= ? AND kind IS NOT NULL "
    "AND step <= ? ORDER BY seq LIMIT ?"
)
"""The checkpoint rows from an anchor up to a step, oldest first: the primary key read
forwards from the anchor's ``seq``, one row a step (a step saved again is saved as a
snapshot, an anchor of its own: no step after the anchor has two rows), so the ``LIMIT``
ends the scan at the step loaded; ``LIMIT`` rows that do not reach it are a damaged file."""
_BODIES = (
    "SELECT seq, kind, state FROM entries WHERE run_id = ? AND seq BETWEEN ? AND ? "
    "AND kind IS NOT NULL"
)
"""The bodies of a chain's deltas and their anchor: one range of the primary key."""
_HEAD = "SELECT node, at, tasks FROM entries WHERE run_id = ? AND seq = ?"
"""The loaded checkpoint's next node, time and frontier (``tasks``, before the bodies)."""
_LISTING = "SELECT step, node, at FROM entries WHERE run_id = ? AND kind IS NOT NULL ORDER BY seq"
"""Every checkpoint's step, node and time: the run's range of the primary key (PostgreSQL's
listing; its big values are TOASTed, out of the row)."""
_LISTING_ON = (
    "SELECT run_id, step, node, at FROM entries WHERE run_id >= ? AND kind IS NOT NULL "
    "ORDER BY run_id, seq"
)
"""SQLite's listing: the primary key from the run's first entry on, read until the next
run's (the caller stops), each row up to ``at``, before its bodies. A range bounded by
``run_id = ?`` would compare each row's key with the range's end, and in a WITHOUT ROWID
table a row's key is the whole row: a row bigger than its page (a snapshot, an event
carrying a state) would be read whole, overflow pages and all. One seek, no end: only the
rows beside the run's first key are compared."""
_BY_SEQ = 500
"""Anchors' bodies read per statement (``seq IN (...)``; SQLite allows 32,766 variables
since 3.32, 999 before)."""


def _chain(db: sqlite3.Connection, run_id: str, step: int | None) -> list[chains.Link]:
    """The rows that make up ``step`` (default: the latest), newest first: its deltas
    back to an anchor (the primary key, from the anchor on), then the anchors back to a
    snapshot (``entries_anchors``); empty when there is no checkpoint at ``step``."""
    if step is None:
        found = db.execute(_LATEST, (run_id,)).fetchone()
        if found is None:
            return []
        step = int(found[0])
    cursor = db.execute(_ANCHORS, (run_id, step))
    try:
        path = chains.anchors(cursor)
    finally:
        cursor.close()
    if not path:
        return []
    if path[0].step != step:  # deltas from the first anchor, included, up to step
        steps = step - path[0].step + 1
        since = db.execute(_DELTAS, (run_id, path[0].key, step, steps)).fetchall()
        head = chains.links(reversed(since), step)
        if not head and len(since) < steps:
            return []  # no row at step
        if not head or head[-1] != path[0]:  # the deltas end elsewhere than at the anchor
            raise StoreError(
                f"the checkpoint chain of run {run_id!r} has no anchor at step "
                f"{path[0].step} for the deltas after it; the file is damaged: restore it "
                "from a backup"
            )
        path = head[:-1] + path
    return path


def _rows(
    db: sqlite3.Connection, run_id: str, chain: list[chains.Link]
) -> Iterator[tuple[int, str | None, str]]:
    # The deltas and their anchor: one range scan of the primary key (their entries are
    # consecutive in seq but for a decision's entries between them). The anchors before
    # it: a lookup each, a few statements in all.
    tail = next(i for i, link in enumerate(chain) if chains.is_anchor(link.kind))
    bodies = {
        seq: (kind, body)
        for seq, kind, body in db.execute(_BODIES, (run_id, chain[tail].key, chain[0].key))
    }
    rest = [link.key for link in chain[tail + 1 :]]
    for at in range(0, len(rest), _BY_SEQ):
        keys = rest[at : at + _BY_SEQ]
        marks = ",".join("?" * len(keys))
        bodies.update(
            (seq, (kind, body))
            for seq, kind, body in db.execute(
                f"SELECT seq, kind, state FROM entries WHERE run_id = ? AND seq IN ({marks})",
                (run_id, *keys),
            )
        )
    for link in chain:
        kind, body = bodies[link.key]
        yield link.step, kind, body


def checkpoint(db: sqlite3.Connection, run_id: str, step: int | None) -> Checkpoint | None:
    """The checkpoint after ``step`` nodes (default: the latest), or ``None``."""
    chain = _chain(db, run_id, step)
    if not chain:
        return None
    at_step, seq, _ = chain[0]
    node, at, tasks = db.execute(_HEAD, (run_id, seq)).fetchone()
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


def infos(db: sqlite3.Connection, run_id: str, *, open_ended: bool) -> list[CheckpointInfo]:
    """Every checkpoint's step, node and time, from one scan of the run's primary-key
    range: those columns come before the bodies (0012), so no body is read.
    ``open_ended``: read it by ``_LISTING_ON`` (the dialect's
    :attr:`~agentnb.store.dialect.Dialect.open_listing`)."""
    if open_ended:
        cursor = db.execute(_LISTING_ON, (run_id,))
        try:
            rows = [r[1:] for r in itertools.takewhile(lambda r: r[0] == run_id, cursor)]
        finally:
            cursor.close()
    else:
        rows = db.execute(_LISTING, (run_id,)).fetchall()
    latest = {s: (node, at) for s, node, at in rows}  # the last entry of a step saved twice
    return [CheckpointInfo(run_id, s, node, at) for s, (node, at) in latest.items()]


def convert(db: sqlite3.Connection) -> None:
    """Migration 0011's Python step: every run's checkpoints become a chain of snapshots,
    skips and deltas cut as a writer cuts it (:class:`~agentnb.store.chains.Chain`).

    For each run, in a savepoint of its own, the latest entry of each step, in step order:
    a full state (an entry from before 0008, or a snapshot) stays a snapshot where the
    chain asks for one (the first, and wherever :func:`~agentnb.store.deltas.diff` has no
    delta) and is rewritten as the delta computed from the two states alone (no reducer
    is involved) otherwise; a delta stays as it is; and every row the chain cuts at
    becomes a skip (or a snapshot). Each rewritten step is rebuilt from the rows it
    depends on and compared with the state, byte for byte, before the next one; a run
    whose rebuild differs anywhere, or whose steps are not consecutive, is rolled back to
    its savepoint and keeps its rows as they were. The state of one step (and of the last
    anchor, as JSON) is in memory at a time, so a long run converts in constant memory.
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
    twice: set[int] = set()  # steps a decision's edit saved again: their latest row stays
    # whole, as the writer stores an edit (so no earlier row of the step is an anchor
    # the reader could take for it)
    for step, seq in db.execute(
        "SELECT step, seq FROM entries WHERE run_id = ? AND state IS NOT NULL ORDER BY seq",
        (run_id,),
    ).fetchall():
        if step in latest:
            twice.add(step)
        latest[step] = seq
    steps = sorted(latest)
    if not steps or steps != list(range(steps[0], steps[0] + len(steps))):
        return not steps  # nothing to convert; or a gap: kept as it is
    state: dict[str, Any] | None = None  # the state of the step before, as stored
    anchor = ""  # the JSON of the last anchor's state
    chain = Chain()
    for step in steps:
        seq = latest[step]
        kind, text = db.execute(
            "SELECT kind, state FROM entries WHERE run_id = ? AND seq = ?", (run_id, seq)
        ).fetchone()
        if state is None and not chains.is_snapshot(kind):
            return False  # a chain without its snapshot: left for the reader to report
        body: str | None = None
        if chains.is_snapshot(kind):
            current: dict[str, Any] = loads(text)
            delta = None if state is None or step in twice else deltas.diff(state, current)
            if delta is not None:
                assert state is not None
                if dumps(deltas.apply(state, delta)) != text:
                    return False
                # The chain keeps the delta until its next anchor: a copy of its own, as
                # ``current`` is changed in place by the steps after it.
                delta_json = dumps(delta)
                body, chain = chain.push(loads(delta_json), delta_json)
        else:
            assert state is not None
            current = chains.apply_owned(state, loads(text))
            if step not in twice:
                body, chain = chain.push(loads(text), text)
        if body is None:  # a snapshot: the chain starts again from it
            whole = text if chains.is_snapshot(kind) else dumps(current)
            chain, anchor = Chain.after(whole), whole
            if kind != chains.SNAPSHOT or whole != text:
                _store(db, run_id, seq, chains.SNAPSHOT, whole)
        elif chain.last == chains.SKIP:
            rebuilt = dumps(chains.rebuild([(step, chains.SKIP, body), (-1, None, anchor)]))
            if rebuilt != dumps(current):
                return False
            anchor = rebuilt
            _store(db, run_id, seq, chains.SKIP, body)
        elif chains.is_snapshot(kind):
            _store(db, run_id, seq, chains.DELTA, body)
        state = current
    return True


def _store(db: sqlite3.Connection, run_id: str, seq: int, kind: str, body: str) -> None:
    db.execute(
        "UPDATE entries SET kind = ?, state = ? WHERE run_id = ? AND seq = ?",
        (kind, body, run_id, seq),
    )
