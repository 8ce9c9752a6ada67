"""The SQL checkpointers' superstep tables: pending writes, held tasks and their decisions.

Functions on an open connection, called inside the write transactions of
:class:`~agentnb.store.sql.SqlCheckpointer`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

from agentnb._json import dumps, loads
from agentnb.store.records import Decision, PendingTask
from agentnb.store.writes import StepCommit

__all__ = [
    "HELD_COLUMNS",
    "decide",
    "held",
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


def task_edit(task: PendingTask) -> str | None:
    """What a held task's row keeps of its approval's edit (an answer keeps nothing)."""
    if task.update is None:
        return None
    return dumps({"update": task.update, "replaces": list(task.replaces)})


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


def decide(db: sqlite3.Connection, task: PendingTask) -> None:
    """Record a held task's accepted decision: a conditional update of its row (the rules
    are :func:`agentnb.store.decisions.verdict`'s; the transaction holds the run's lock)."""
    db.execute(
        "UPDATE pending_tasks SET status = ?, decided_by = ?, decided_at = ?, edit = ? "
        "WHERE run_id = ? AND step = ? AND task_id = ? AND status = 'pending'",
        (
            task.status,
            task.decided_by,
            task.decided_at,
            task_edit(task),
            task.run_id,
            task.step,
            task.task_id,
        ),
    )


def held(db: sqlite3.Connection, run_id: str) -> list[PendingTask]:
    """The run's held tasks, decided or not."""
    rows = db.execute(f"SELECT {HELD_COLUMNS} FROM pending_tasks WHERE run_id = ?", (run_id,))
    return [held_task(run_id, r) for r in rows]
