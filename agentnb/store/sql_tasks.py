"""The SQL checkpointers' superstep tables: pending writes, held tasks and their decisions.

Functions on an open connection, called inside the write transactions of
:class:`~agentnb.store.sql.SqlCheckpointer`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from agentnb._json import dumps, loads
from agentnb.errors import RunNotFound
from agentnb.identity import Identity
from agentnb.store.policy import PolicyCheck
from agentnb.store.records import Decision, Event, EventType, PendingTask, Status
from agentnb.store.sql_decisions import audit, get_run, policy_refusal
from agentnb.store.sql_rows import ENTRY, pack
from agentnb.store.writes import (
    DecisionEdit,
    StepCommit,
    decision_status,
    edit_conflict,
    task_refusal,
)

__all__ = [
    "HELD_COLUMNS",
    "decide",
    "held_task",
    "settle",
    "task_edit",
    "with_edit",
]

HELD_COLUMNS = "step, task_id, node, digest, status, decided_by, decided_at, edit"


def held_task(run_id: str, row: tuple[Any, ...]) -> PendingTask:
    """A ``pending_tasks`` row (:data:`HELD_COLUMNS`) as a record."""
    step, task_id, node, digest, status, decided_by, decided_at, edit = row
    kept: dict[str, Any] = {"update": None, "replaces": []} if edit is None else loads(edit)
    return PendingTask(
        run_id,
        step,
        task_id,
        node,
        digest,
        status,
        decided_by,
        decided_at,
        update=kept["update"],
        replaces=tuple(kept["replaces"]),
    )


def task_edit(edit: DecisionEdit | None) -> str | None:
    """What a held task's row keeps of its approval's edit (an answer keeps nothing)."""
    if edit is None or edit.update is None:
        return None
    return dumps({"update": edit.update, "replaces": list(edit.replaces)})


def with_edit(decision: Decision, edit: str | None) -> Decision:
    return decision if edit is None else dataclasses.replace(decision, edit=loads(edit))


def settle(db: sqlite3.Connection, run_id: str, change: StepCommit) -> None:
    """A superstep's side tables: held tasks saved; pending writes and holds cleared."""
    if change.settles is not None:
        for table in ("pending_writes", "pending_tasks"):
            db.execute(
                f"DELETE FROM {table} WHERE run_id = ? AND step <= ?",
                (run_id, change.settles),
            )
    if change.holds:
        db.execute(
            "UPDATE pending_writes SET events = '[]' WHERE run_id = ? AND step = ?",
            (run_id, change.step),
        )
    for task_id, node, digest in change.holds:
        db.execute(
            "INSERT INTO pending_tasks VALUES (?, ?, ?, ?, ?, 'pending', NULL, NULL, NULL) "
            "ON CONFLICT DO NOTHING",
            (run_id, change.step, task_id, node, digest),
        )


def decide(
    db: sqlite3.Connection,
    run_id: str,
    decision: str,
    approver: str,
    *,
    comment: str | None,
    expected_digest: str | None,
    task: str | None,
    edit: DecisionEdit | None,
    who: Identity,
    checks: Mapping[str, PolicyCheck],
) -> tuple[Decision, Exception | None]:
    """Decide one held task of a superstep exactly once — a conditional update of its row —
    and audit the attempt, in the caller's transaction; return the record and the refusal
    (raised by the caller once the audit row is committed).

    The interrupt's approver policy is checked as for a whole run, at the task's node.
    """
    now = time.time()
    try:
        current = get_run(db, run_id)
    except RunNotFound as missing:
        record = audit(
            db, run_id, task, None, decision, approver, comment, expected_digest, None,
            reason="unknown run", accepted=False, now=now, who=who, edit=edit,
        )  # fmt: skip
        return record, missing
    refusal: Exception | None = None
    reason: str | None = None
    if task is None:
        waiting = db.execute(
            "SELECT task_id FROM pending_tasks WHERE run_id = ? AND status = 'pending'",
            (run_id,),
        ).fetchall()
        task = waiting[0][0] if len(waiting) == 1 else None
    held_node = db.execute(
        "SELECT node FROM pending_tasks WHERE run_id = ? AND task_id = ? AND status = 'pending'",
        (run_id, task),
    ).fetchone()
    denied: tuple[Exception, str] | None = None
    if held_node is not None and current.status == Status.PENDING:
        at_task = dataclasses.replace(current, node=held_node[0])
        denied = policy_refusal(db, at_task, who, decision, approver, checks)
    if denied is None and decision == "approved" and held_node is not None:
        denied = edit_conflict(run_id, edit, task, _held(db, run_id))
    row = (
        None
        if denied is not None
        else db.execute(
            "UPDATE pending_tasks SET status = ?, decided_by = ?, decided_at = ?, edit = ? "
            "WHERE run_id = ? AND task_id = ? AND status = 'pending' "
            "AND (CAST(? AS TEXT) IS NULL OR digest = ?) "
            "AND EXISTS (SELECT 1 FROM runs WHERE run_id = ? AND status = 'pending') "
            "RETURNING step, node, digest",
            (
                decision,
                approver,
                now,
                task_edit(edit) if decision == "approved" else None,
                run_id,
                task,
                expected_digest,
                expected_digest,
                run_id,
            ),
        ).fetchone()
    )
    if row is not None:
        step, node, digest = row
        left = db.execute(
            "SELECT count(*) FROM pending_tasks WHERE run_id = ? AND status = 'pending'",
            (run_id,),
        ).fetchone()[0]
        if decision == "rejected" or not left:
            db.execute(
                "UPDATE runs SET status = ?, status_at = ?, decided_by = ?, "
                "decided_at = ? WHERE run_id = ?",
                (str(decision_status(decision)), now, approver, now, run_id),
            )
        kind = EventType.APPROVED if decision == "approved" else EventType.REJECTED
        payload = {"by": approver, "identity": who.name, "comment": comment}
        payload.update(digest=digest, task=task)
        if edit is not None:
            payload.update(edit.audit())
        event = Event(run_id, current.seq + 1, current.step, kind, node, payload, now)
        db.execute(
            f"{ENTRY} VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, NULL)",
            (run_id, event.seq, current.step, current.node, pack([event]), now),
        )
    else:
        held = _held(db, run_id)
        refusal, reason = task_refusal(run_id, task, held, current, expected_digest)
        if denied is not None:
            refusal, reason = denied
        step, digest = current.step, None
    record = audit(
        db, run_id, task, step, decision, approver, comment, expected_digest, digest,
        reason=reason, accepted=refusal is None, now=now, who=who, edit=edit,
    )  # fmt: skip
    return record, refusal


def _held(db: sqlite3.Connection, run_id: str) -> list[PendingTask]:
    rows = db.execute(f"SELECT {HELD_COLUMNS} FROM pending_tasks WHERE run_id = ?", (run_id,))
    return [held_task(run_id, r) for r in rows]
