"""Rows of the SQL checkpointers' tables, to and from records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb._json import dumps, loads
from agentnb.identity import Identity
from agentnb.store.records import Decision, Event, RunRecord, Status

__all__ = [
    "AUDIT_COLUMNS",
    "DECISION_COLUMNS",
    "ENTRY",
    "RUN_SELECT",
    "decision",
    "pack",
    "run",
    "unpack",
]

# A run's row joined with its latest journal entry (which says where the run stands).
RUN_SELECT = (
    "SELECT r.run_id, r.graph, r.shape, r.status, e.node, e.step, e.seq, r.max_steps, "
    "r.created_at, CASE WHEN e.at > r.status_at THEN e.at ELSE r.status_at END, r.error, "
    "r.pending_digest, r.decided_by, r.decided_at, r.lease_owner, r.lease_expires, r.fence "
    "FROM runs r JOIN entries e ON e.run_id = r.run_id "
    "AND e.seq = (SELECT max(seq) FROM entries WHERE run_id = r.run_id)"
)
ENTRY = "INSERT INTO entries (run_id, seq, step, node, state, events, at, tasks, kind)"
"""The journal's insert, up to its values."""
AUDIT_COLUMNS = (
    "run_id, node, step, decision, approver, comment, digest_shown, pending_digest, "
    "accepted, reason, at, identity"
)
"""An audit row's columns but its id (the database numbers the rows)."""
DECISION_COLUMNS = f"id, {AUDIT_COLUMNS}"


def run(row: Sequence[Any]) -> RunRecord:
    error = row[10]
    return RunRecord(
        run_id=row[0],
        graph=row[1],
        shape=row[2],
        status=Status(row[3]),
        node=row[4],
        step=row[5],
        seq=row[6],
        max_steps=row[7],
        created_at=row[8],
        updated_at=row[9],
        error=loads(error) if error else None,
        pending_digest=row[11],
        decided_by=row[12],
        decided_at=row[13],
        lease_owner=row[14],
        lease_expires=row[15],
        fence=row[16],
    )


def pack(events: Sequence[Event]) -> str:
    return dumps([[e.seq, e.step, e.type, e.node, e.payload, e.at] for e in events])


def unpack(run_id: str, text: str) -> list[Event]:
    return [Event(run_id, *fields) for fields in loads(text)]


def decision(row: Sequence[Any]) -> Decision:
    return Decision(
        id=row[0],
        run_id=row[1],
        node=row[2],
        step=row[3],
        decision=row[4],
        approver=row[5],
        comment=row[6],
        digest_shown=row[7],
        pending_digest=row[8],
        accepted=bool(row[9]),
        reason=row[10],
        at=row[11],
        identity=Identity.from_json(loads(row[12])) if row[12] else None,
    )
