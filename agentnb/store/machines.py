"""State-machine instances in the SQLite checkpointer: ``SqliteCheckpointer(path).machines``.

It is the :class:`~agentnb.fsm.instance.MachineStore` contract on the checkpointer's own
connection, so workflows and machines share one file, one lock and one set of pragmas.
A transition and its event record are written in one ``BEGIN IMMEDIATE`` transaction; the
conditional update on ``seq`` refuses a write based on a stale read, and the unique
``(instance_id, event_id)`` makes a repeated event id answer with its first record — also
across processes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from agentnb._json import dumps, loads
from agentnb.errors import InstanceConflict, InstanceNotFound, StoreError
from agentnb.fsm.records import InstanceSnapshot, TimerChange, TimerRecord, TransitionRecord

__all__ = ["SqliteMachineStore"]

Write = Callable[[], AbstractContextManager[sqlite3.Connection]]
"""Opens a ``BEGIN IMMEDIATE`` transaction on the checkpointer's connection."""
Read = Callable[[str, Sequence[Any]], list[Any]]
"""Runs one query on the checkpointer's connection and returns its rows."""
_TIMER_COLUMNS = "instance_id, key, sendid, event, data, fire_at"

_RECORD_COLUMNS = (
    "instance_id, seq, event, event_id, source, target, payload, delta, at, ignored, reason, "
    "transition"
)


def _record(row: Sequence[Any]) -> TransitionRecord:
    return TransitionRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        loads(row[6]),
        loads(row[7]),
        row[8],
        bool(row[9]),
        row[10],
        row[11],
    )


def _timer(row: Sequence[Any]) -> TimerRecord:
    return TimerRecord(row[0], row[1], row[3], loads(row[4]), row[5], row[2])


def _apply_timers(db: sqlite3.Connection, instance_id: str, timers: TimerChange | None) -> None:
    if timers is None:
        return
    if timers.fired is not None:
        db.execute(
            "DELETE FROM machine_timers WHERE instance_id = ? AND key = ?",
            (instance_id, timers.fired),
        )
    for sendid in timers.cancel:
        db.execute(
            "DELETE FROM machine_timers WHERE instance_id = ? AND sendid = ?",
            (instance_id, sendid),
        )
    for t in timers.add:
        db.execute(
            f"INSERT INTO machine_timers ({_TIMER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (instance_id, t.key, t.sendid, t.event, dumps(t.data, root="timer"), t.fire_at),
        )


class SqliteMachineStore:
    """Machine instances kept in a :class:`~agentnb.store.sqlite.SqliteCheckpointer`.

    It gets the checkpointer's two doors to its connection — ``write`` (one ``BEGIN
    IMMEDIATE`` transaction) and ``read`` (one query) — so it shares the connection, lock and
    pragmas without reaching into the checkpointer's internals.
    """

    def __init__(self, path: str, write: Write, read: Read) -> None:
        self.path = path
        self._write = write
        self._read = read

    def __repr__(self) -> str:
        return f"<SqliteMachineStore in {self.path!r}>"

    def create(self, snapshot: InstanceSnapshot, timers: TimerChange | None = None) -> None:
        context = dumps(snapshot.context, root="context")
        chart = dumps(snapshot.chart, root="chart")
        now = time.time()
        with self._write() as db:
            inserted = db.execute(
                "INSERT INTO machine_instances (instance_id, machine, state, context, seq, "
                "created_at, updated_at, chart) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (
                    snapshot.instance_id,
                    snapshot.machine,
                    snapshot.state,
                    context,
                    snapshot.seq,
                    now,
                    now,
                    chart,
                ),
            ).rowcount
            if inserted:
                _apply_timers(db, snapshot.instance_id, timers)
        if not inserted:
            raise StoreError(
                f"instance {snapshot.instance_id!r} already exists in this store. Attach "
                f"to it with machine.resume({snapshot.instance_id!r}, store=...), or start "
                "with another id"
            )

    def load(self, instance_id: str) -> InstanceSnapshot | None:
        rows = self._read(
            "SELECT machine, state, context, seq, chart FROM machine_instances "
            "WHERE instance_id = ?",
            (instance_id,),
        )
        if not rows:
            return None
        return InstanceSnapshot.from_row(instance_id, rows[0])

    def commit(
        self,
        snapshot: InstanceSnapshot,
        record: TransitionRecord,
        timers: TimerChange | None = None,
    ) -> TransitionRecord:
        iid = snapshot.instance_id
        payload = dumps(record.payload, root="payload")
        delta = dumps(record.delta, root="delta")
        context = dumps(snapshot.context, root="context")
        chart = dumps(snapshot.chart, root="chart")
        with self._write() as db:
            done = db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM machine_events "
                "WHERE instance_id = ? AND event_id = ?",
                (iid, record.event_id),
            ).fetchone()
            if done is not None:
                return _record(done)
            moved = db.execute(
                "UPDATE machine_instances SET state = ?, context = ?, seq = ?, updated_at = ?, "
                "chart = ? WHERE instance_id = ? AND seq = ?",
                (snapshot.state, context, snapshot.seq, record.at, chart, iid, record.seq - 1),
            ).rowcount
            if not moved or snapshot.seq != record.seq:
                row = db.execute(
                    "SELECT seq FROM machine_instances WHERE instance_id = ?", (iid,)
                ).fetchone()
                if row is None:
                    raise InstanceNotFound(iid)
                raise InstanceConflict(iid, record.event, record.seq - 1, row[0])
            db.execute(
                f"INSERT INTO machine_events ({_RECORD_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    iid,
                    record.seq,
                    record.event,
                    record.event_id,
                    record.source,
                    record.target,
                    payload,
                    delta,
                    record.at,
                    int(record.ignored),
                    record.reason,
                    record.transition,
                ),
            )
            _apply_timers(db, iid, timers)
        return record

    def find_event(self, instance_id: str, event_id: str) -> TransitionRecord | None:
        rows = self._read(
            f"SELECT {_RECORD_COLUMNS} FROM machine_events WHERE instance_id = ? AND event_id = ?",
            (instance_id, event_id),
        )
        return _record(rows[0]) if rows else None

    def history(self, instance_id: str) -> list[TransitionRecord]:
        rows = self._read(
            f"SELECT {_RECORD_COLUMNS} FROM machine_events WHERE instance_id = ? ORDER BY seq",
            (instance_id,),
        )
        return [_record(r) for r in rows]

    def instances(self) -> list[InstanceSnapshot]:
        """Every instance in the store, newest first."""
        rows = self._read(
            "SELECT instance_id, machine, state, context, seq, chart FROM machine_instances "
            "ORDER BY created_at DESC",
            (),
        )
        return [InstanceSnapshot.from_row(r[0], r[1:]) for r in rows]

    def timers(self, instance_id: str) -> list[TimerRecord]:
        rows = self._read(
            f"SELECT {_TIMER_COLUMNS} FROM machine_timers WHERE instance_id = ? "
            "ORDER BY fire_at, key",
            (instance_id,),
        )
        return [_timer(r) for r in rows]
