"""State-machine instances in the SQLite checkpointer: ``SqliteCheckpointer(path).machines``.

It is the :class:`~agentnb.fsm.instance.MachineStore` contract on the checkpointer's own
connection, so workflows and machines share one file, one lock and one set of pragmas.
A transition and its event record are written in one ``BEGIN IMMEDIATE`` transaction; the
conditional update on ``seq`` refuses a write based on a stale read, and the unique
``(instance_id, event_id)`` makes a repeated event id answer with its first record — also
across processes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentnb._json import dumps, loads
from agentnb.errors import InstanceConflict, InstanceNotFound, StoreError
from agentnb.fsm.records import InstanceSnapshot, TransitionRecord

if TYPE_CHECKING:
    from agentnb.store.sqlite import SqliteCheckpointer

__all__ = ["SqliteMachineStore"]

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


class SqliteMachineStore:
    """Machine instances kept in a :class:`~agentnb.store.sqlite.SqliteCheckpointer`."""

    def __init__(self, checkpointer: SqliteCheckpointer) -> None:
        self.checkpointer = checkpointer

    def __repr__(self) -> str:
        return f"<SqliteMachineStore in {self.checkpointer.path!r}>"

    def create(self, snapshot: InstanceSnapshot) -> None:
        context = dumps(snapshot.context, root="context")
        now = time.time()
        with self.checkpointer._write() as db:
            inserted = db.execute(
                "INSERT OR IGNORE INTO machine_instances VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    snapshot.instance_id,
                    snapshot.machine,
                    snapshot.state,
                    context,
                    snapshot.seq,
                    now,
                    now,
                ),
            ).rowcount
        if not inserted:
            raise StoreError(
                f"instance {snapshot.instance_id!r} already exists in this store. Attach "
                f"to it with machine.resume({snapshot.instance_id!r}, store=...), or start "
                "with another id"
            )

    def load(self, instance_id: str) -> InstanceSnapshot | None:
        rows = self.checkpointer._read(
            "SELECT machine, state, context, seq FROM machine_instances WHERE instance_id = ?",
            (instance_id,),
        )
        if not rows:
            return None
        machine, state, context, seq = rows[0]
        return InstanceSnapshot(instance_id, machine, state, loads(context), seq)

    def commit(self, snapshot: InstanceSnapshot, record: TransitionRecord) -> TransitionRecord:
        iid = snapshot.instance_id
        payload = dumps(record.payload, root="payload")
        delta = dumps(record.delta, root="delta")
        context = dumps(snapshot.context, root="context")
        with self.checkpointer._write() as db:
            done = db.execute(
                f"SELECT {_RECORD_COLUMNS} FROM machine_events "
                "WHERE instance_id = ? AND event_id = ?",
                (iid, record.event_id),
            ).fetchone()
            if done is not None:
                return _record(done)
            moved = db.execute(
                "UPDATE machine_instances SET state = ?, context = ?, seq = ?, updated_at = ? "
                "WHERE instance_id = ? AND seq = ?",
                (snapshot.state, context, snapshot.seq, record.at, iid, record.seq - 1),
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
        return record

    def find_event(self, instance_id: str, event_id: str) -> TransitionRecord | None:
        rows = self.checkpointer._read(
            f"SELECT {_RECORD_COLUMNS} FROM machine_events WHERE instance_id = ? AND event_id = ?",
            (instance_id, event_id),
        )
        return _record(rows[0]) if rows else None

    def history(self, instance_id: str) -> list[TransitionRecord]:
        rows = self.checkpointer._read(
            f"SELECT {_RECORD_COLUMNS} FROM machine_events WHERE instance_id = ? ORDER BY seq",
            (instance_id,),
        )
        return [_record(r) for r in rows]

    def instances(self) -> list[InstanceSnapshot]:
        """Every instance in the store, newest first."""
        rows = self.checkpointer._read(
            "SELECT instance_id, machine, state, context, seq FROM machine_instances "
            "ORDER BY created_at DESC"
        )
        return [InstanceSnapshot(i, m, s, loads(c), q) for i, m, s, c, q in rows]
