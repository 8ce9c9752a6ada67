"""The SQL checkpointers' decision transaction: state, policy, digest, then the update.

Everything here runs inside one write transaction opened by
:meth:`SqlCheckpointer.decide <agentnb.store.sql.SqlCheckpointer.decide>` (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: under the run's advisory lock): the lock is held from the
first read to the commit, so what is checked cannot change before
the run's row is updated — in this process or any other. The refusal (if any) is returned,
not raised, so that the attempt's audit row commits with the transaction.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping

from agentnb._json import dumps, loads
from agentnb.errors import (
    ApprovalNotPending,
    DecisionError,
    NotAuthorized,
    PolicyUnavailable,
    RunNotFound,
    StaleApproval,
)
from agentnb.identity import Identity
from agentnb.store import chains, sql_checkpoints
from agentnb.store.policy import (
    ApproverPolicy,
    PendingRun,
    PolicyCheck,
    Refusal,
    RunPolicy,
    refusal,
)
from agentnb.store.records import Decision, Event, EventType, RunRecord, Status
from agentnb.store.sql_rows import AUDIT_COLUMNS, RUN_SELECT, pack, unpack
from agentnb.store.sql_rows import run as run_row
from agentnb.store.writes import DecisionEdit, decision_status

__all__ = [
    "audit",
    "decide",
    "edit_checkpoint",
    "get_run",
    "policy_refusal",
    "record_edit",
    "run_policy",
]


def get_run(db: sqlite3.Connection, run_id: str) -> RunRecord:
    row = db.execute(f"{RUN_SELECT} WHERE r.run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotFound(run_id)
    return run_row(row)


def run_policy(db: sqlite3.Connection, run_id: str) -> RunPolicy:
    """The policy stored when the run started (empty for a run from before version 4)."""
    row = db.execute(
        "SELECT started_by, interrupts FROM run_policies WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None:
        get_run(db, run_id)  # RunNotFound for an unknown run; else no policy
        return RunPolicy()
    started_by, interrupts = row
    return RunPolicy(
        None if started_by is None else Identity.from_json(loads(started_by)),
        {k: ApproverPolicy.from_json(v) for k, v in loads(interrupts).items()},
    )


def decide(
    db: sqlite3.Connection,
    run_id: str,
    decision: str,
    approver: str,
    *,
    comment: str | None,
    expected_digest: str | None,
    who: Identity,
    checks: Mapping[str, PolicyCheck],
    edit: DecisionEdit | None = None,
) -> tuple[Decision, DecisionError | RunNotFound | None]:
    """Decide (or refuse) a whole run and audit it, in the caller's transaction; return
    both outcomes.

    An accepted approval's ``edit`` (edited state, or an answer) is saved with it.
    """
    refused: DecisionError | RunNotFound | None = None
    reason: str | None = None
    node: str | None = None
    step: int | None = None
    digest: str | None = None
    now = time.time()
    try:
        current = get_run(db, run_id)
    except RunNotFound as missing:
        refused, reason = missing, "unknown run"
    else:
        node, step, digest = current.node, current.step, current.pending_digest
        if current.status != Status.PENDING:
            refused = ApprovalNotPending(run_id, current.status, current.decided_by)
            reason = f"not pending: {current.status}"
        elif denied := policy_refusal(db, current, who, decision, approver, checks):
            refused, reason = denied
        elif expected_digest is not None and expected_digest != digest:
            refused = StaleApproval(run_id, expected_digest, digest or "")
            reason = "stale: the pending state changed"
    if refused is None:
        db.execute(
            "UPDATE runs SET status = ?, status_at = ?, decided_by = ?, decided_at = ? "
            "WHERE run_id = ? AND status = 'pending'",
            (str(decision_status(decision)), now, approver, now, run_id),
        )
        kind = EventType.APPROVED if decision == "approved" else EventType.REJECTED
        payload = {"by": approver, "identity": who.name, "comment": comment, "digest": digest}
        edit = edit if decision == "approved" else None
        if edit is not None:
            payload.update(edit.audit())
        state, tasks = edit_checkpoint(db, run_id, edit)
        seq = current.seq + 1
        event = Event(run_id, seq, current.step, kind, node, payload, now)
        db.execute(
            "INSERT INTO entries (run_id, seq, step, node, state, events, at, tasks, kind) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                seq,
                current.step,
                node,
                state,
                pack([event]),
                now,
                tasks,
                None if state is None else chains.SNAPSHOT,
            ),  # an edit: stored whole
        )
    record = audit(
        db,
        run_id,
        node,
        step,
        decision,
        approver,
        comment,
        expected_digest,
        digest,
        reason=reason,
        accepted=refused is None,
        now=now,
        who=who,
        edit=edit,
    )
    return record, refused


def audit(
    db: sqlite3.Connection,
    run_id: str,
    node: str | None,
    step: int | None,
    decision: str,
    approver: str,
    comment: str | None,
    expected_digest: str | None,
    digest: str | None,
    *,
    reason: str | None,
    accepted: bool,
    now: float,
    who: Identity,
    edit: DecisionEdit | None,
) -> Decision:
    """Append one decision attempt to the audit (and, accepted, its edit): the record of a
    whole run's decision and of a held task's alike."""
    decision_id = db.execute(
        f"INSERT INTO decisions ({AUDIT_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            run_id,
            node,
            step,
            decision,
            approver,
            comment,
            expected_digest,
            digest,
            int(accepted),
            reason,
            now,
            dumps(who.to_json()),
        ),
    ).fetchone()[0]
    if accepted and edit is not None:
        record_edit(db, decision_id, edit, run_id=run_id, step=step, node=node, at=now)
    return Decision(
        decision_id,
        run_id,
        node,
        step,
        decision,
        approver,
        comment,
        expected_digest,
        digest,
        accepted=accepted,
        reason=reason,
        at=now,
        identity=who,
        edit=None if not accepted or edit is None else edit.audit(),
    )


def policy_refusal(
    db: sqlite3.Connection,
    run: RunRecord,
    who: Identity,
    decision: str,
    approver: str,
    checks: Mapping[str, PolicyCheck],
) -> tuple[DecisionError, str] | None:
    """The error and audit reason when the run's approver policy refuses ``who``."""
    found = _refusal(db, run, who, decision, approver, checks)
    if found is None:
        return None
    if found.unavailable is not None:
        unavailable = PolicyUnavailable(run.run_id, run.node, who.name, found.unavailable)
        return unavailable, f"policy unavailable: {found.reason}"
    return NotAuthorized(run.run_id, run.node, who.name, found.reason), (
        f"not authorized: {found.reason}"
    )


def _refusal(
    db: sqlite3.Connection,
    run: RunRecord,
    who: Identity,
    decision: str,
    approver: str,
    checks: Mapping[str, PolicyCheck],
) -> Refusal | None:
    """Check the run's stored approver policy against ``who``."""
    policy = run_policy(db, run.run_id)
    if not policy.interrupts:
        return None
    # The pause's own event says which boundary it is (after which node, if any).
    rows = db.execute(
        "SELECT events FROM entries WHERE run_id = ? ORDER BY seq DESC", (run.run_id,)
    )
    after = None
    for event in (e for (packed,) in rows for e in reversed(unpack(run.run_id, packed))):
        if event.type == EventType.INTERRUPTED:
            after = event.payload.get("after")
            break
    rows.close()
    applying = policy.applying(run.node, after)
    if not applying:
        return None

    def pending() -> PendingRun:
        return PendingRun(
            run.run_id,
            run.graph,
            run.node,
            run.step,
            sql_checkpoints.state(db, run.run_id),
            policy.started_by,
            decision,
            approver,
        )

    return refusal(applying, who, policy.started_by, checks, pending)


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
            "INSERT INTO effects VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (edit.answer_key, run_id, step or 0, node or "", "answer", edit.answer_json, at),
        )
