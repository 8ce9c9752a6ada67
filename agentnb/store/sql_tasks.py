"""The SQLite checkpointer's superstep tables: pending writes, held tasks, decision edits.

Functions on an open connection, called inside :class:`SqliteCheckpointer`'s transactions.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

from agentnb._json import dumps, loads
from agentnb.store.base import DecisionEdit, StepCommit
from agentnb.store.records import Decision, PendingTask

__all__ = [
    "HELD_COLUMNS",
    "edit_checkpoint",
    "held_task",
    "record_edit",
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


def edit_checkpoint(
    db: sqlite3.Connection, run_id: str, edit: DecisionEdit | None
) -> tuple[str | None, str | None]:
    """``(state, tasks)`` for the decision's journal entry: the edited state, if any."""
    if edit is None or edit.state_json is None:
        return None, None
    return edit.state_json, edit.tasks_json


def record_edit(
    db: sqlite3.Connection,
    decision_id: int,
    edit: DecisionEdit,
    *,
    run_id: str,
    step: int | None,
    node: str | None,
    at: float,
) -> None:
    """Audit what an accepted approval carried; an answer also goes to the effects ledger."""
    db.execute("INSERT INTO decision_edits VALUES (?, ?)", (decision_id, dumps(edit.audit())))
    if edit.answer_key is not None and edit.answer_json is not None:
        db.execute(
            "INSERT OR IGNORE INTO effects VALUES (?, ?, ?, ?, ?, ?, ?)",
            (edit.answer_key, run_id, step or 0, node or "", "answer", edit.answer_json, at),
        )


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
            "INSERT OR IGNORE INTO pending_tasks "
            "VALUES (?, ?, ?, ?, ?, 'pending', NULL, NULL, NULL)",
            (run_id, change.step, task_id, node, digest),
        )
