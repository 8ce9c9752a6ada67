"""What a write to a checkpointer carries, and the rules checked before one is applied.

:class:`CheckpointWrite` and :class:`StepCommit` are one step's write
(:meth:`~agentnb.store.base.Checkpointer.commit`); :class:`DecisionEdit` is what an
approval carries besides its yes. The functions are the decision rules every backend
applies alike: a malformed decision is refused before storage is touched, the digest of
what an approver saw binds the decision, and a held task's refusal names its reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentnb._json import dumps
from agentnb.errors import ApprovalNotPending, ConflictingEdit, InvalidDecision, StaleApproval
from agentnb.store.records import DECISIONS, Event, PendingTask, RunRecord, Status

__all__ = [
    "CheckpointWrite",
    "DecisionEdit",
    "StepCommit",
    "check_decision",
    "check_task_edit",
    "decision_status",
    "edit_conflict",
    "pending_digest",
    "task_refusal",
]


@dataclass(slots=True)  # not frozen: built on every step (see agentnb.store.records)
class CheckpointWrite:
    """A checkpoint to save: the state (already JSON) after ``step`` nodes, and the next node;
    or, with ``delta_json``, only what changed since the step before."""

    step: int
    node: str
    state_json: str
    tasks_json: str | None = None
    """The next superstep's frontier (JSON) when it is more than ``node``."""
    delta_json: str | None = None
    """When set, the row stores this delta (:func:`agentnb.store.deltas.diff`, JSON) from
    the run's checkpoint at ``step - 1`` instead of ``state_json`` (which may then be
    empty): the writer chose it with :class:`agentnb.store.chains.Chain`. A run's first
    checkpoint ignores it (always a snapshot). Backends store rows through
    :func:`agentnb.store.chains.row` and load them with :func:`~agentnb.store.chains.rebuild`."""
    delta_kind: str = "delta"
    """What ``delta_json`` is a delta from: ``"delta"``, the step before; ``"skip"``, the
    run's previous anchor (:attr:`agentnb.store.chains.Chain.last` says which)."""


@dataclass(slots=True)  # not frozen: built on every step (see agentnb.store.records)
class StepCommit:
    """Everything one step changes, written in one transaction by :meth:`Checkpointer.commit`."""

    status: Status
    node: str
    step: int
    events: Sequence[Event]
    checkpoint: CheckpointWrite | None = None
    error: dict[str, Any] | None = None
    pending_digest: str | None = None
    release: bool = False
    """Give up the lease with this write (the worker stops driving the run)."""
    settles: int | None = None
    """The superstep whose pending writes this commit merges: they are deleted with it."""
    holds: Sequence[tuple[str, str, str]] = ()
    """``(task id, node, digest)`` of each task of superstep ``step`` an interrupt holds:
    saved as pending approvals (a task already held keeps its row and its decision). The
    events of that superstep's pending writes are committed with it, so the writes keep
    only their deltas."""


@dataclass(frozen=True, slots=True)
class DecisionEdit:
    """What an approval carries besides its yes, saved in the decision's transaction.

    Either an edited state (approve with edits: ``state_json`` becomes the pending step's
    checkpoint; ``update`` and ``approved_digest`` go to the audit), or the answer to a
    node's question (``answer_key`` is the ledger key ``ctx.interrupt`` reads back).
    """

    state_json: str | None = None
    tasks_json: str | None = None
    update: dict[str, Any] | None = None
    approved_digest: str | None = None
    answer_key: str | None = None
    answer_json: str | None = None
    replaces: tuple[str, ...] = ()
    """An edit of one held task: the keys of ``update`` that have no reducer (another
    task's edit replacing one of them is refused, :class:`~agentnb.errors.ConflictingEdit`)."""

    def audit(self) -> dict[str, Any]:
        """What the audit keeps of the edit."""
        from agentnb._json import loads

        kept: dict[str, Any] = {}
        if self.update is not None:
            kept["update"] = self.update
            kept["approved_digest"] = self.approved_digest
        if self.answer_json is not None:
            kept["answer"] = loads(self.answer_json)
        return kept


def check_task_edit(edit: DecisionEdit | None) -> None:
    """An approval of one held task edits that task's input (``update``), never the
    superstep's checkpoint (refused before any write)."""
    if edit is not None and edit.state_json is not None:
        raise InvalidDecision(
            "approving one of several held tasks edits that task's input, not the state "
            "of the superstep; nothing was changed. Pass the edit as run.approve(task=..., "
            "update={...})"
        )


def edit_conflict(
    run_id: str, edit: DecisionEdit | None, task: str | None, held: Sequence[PendingTask]
) -> tuple[ConflictingEdit, str] | None:
    """Why an edit of held ``task`` is refused: it replaces a key (one without a reducer)
    that another held task's accepted edit replaces too. The error and the audit's reason."""
    if edit is None or not edit.replaces or task is None:
        return None
    for other in held:
        if other.task_id != task and other.status == "approved":
            clash = next((k for k in edit.replaces if k in other.replaces), None)
            if clash is not None:
                error = ConflictingEdit(run_id, task, clash, f"task {other.task_id!r}'s edit")
                return error, f"conflicting edit: {clash!r}"
    return None


def check_decision(decision: str, approver: str) -> None:
    """Refuse a malformed decision before anything touches storage."""
    if decision not in DECISIONS:
        raise InvalidDecision(
            f"decision must be 'approved' or 'rejected', not {decision!r}; "
            "nothing was changed (an unknown decision is never taken as an approval)"
        )
    if not isinstance(approver, str) or not approver.strip():
        raise InvalidDecision(
            "a decision needs the approver's name (approver=... / --as NAME) for the audit"
        )


def pending_digest(run_id: str, node: str, step: int, state_json: str) -> str:
    """The digest of what an approver is shown: run, paused node, step and state.

    An approval that carries this digest is refused if the pending state has changed.
    """
    text = dumps([run_id, node, step]) + state_json
    return hashlib.sha256(text.encode()).hexdigest()


def decision_status(decision: str) -> Status:
    return Status.APPROVED if decision == "approved" else Status.REJECTED


def task_refusal(
    run_id: str,
    task: str | None,
    held: Sequence[PendingTask],
    run: RunRecord,
    expected_digest: str | None,
) -> tuple[Exception, str]:
    """Why a decision about a held task is refused: the error, and the audit's reason."""
    from agentnb.errors import TaskNotNamed

    waiting = [t.task_id for t in held if t.status == "pending"]
    if task is None and len(waiting) > 1 and run.status == Status.PENDING:
        return TaskNotNamed(run_id, waiting), "ambiguous: several tasks pending"
    found = next((t for t in held if t.task_id == task), None)
    if run.status != Status.PENDING or found is None or found.status != "pending":
        by = found.decided_by if found is not None else run.decided_by
        status = found.status if found is not None and found.status != "pending" else run.status
        return ApprovalNotPending(run_id, status, by), f"not pending: {status}"
    stale = StaleApproval(run_id, expected_digest or "", found.digest)
    return stale, "stale: the pending state changed"
