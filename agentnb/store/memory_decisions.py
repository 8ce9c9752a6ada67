"""The memory checkpointer's decisions: exactly once, audited, checked against the policy.

Functions on a :class:`~agentnb.store.memory.MemoryCheckpointer`'s tables, called with
its lock held — the lock is what makes a decision the one conditional change of the run
it is in the SQL stores.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentnb._json import loads
from agentnb.errors import (
    ApprovalNotPending,
    NotAuthorized,
    PolicyUnavailable,
    RunNotFound,
    StaleApproval,
)
from agentnb.identity import Identity
from agentnb.store.chains import SNAPSHOT
from agentnb.store.memory_rows import Row, state
from agentnb.store.policy import PendingRun, PolicyCheck, Refusal, refusal
from agentnb.store.records import Decision, Effect, Event, EventType, RunRecord, Status
from agentnb.store.writes import (
    DecisionEdit,
    check_decision,
    check_task_edit,
    decision_status,
    edit_conflict,
    task_refusal,
)

if TYPE_CHECKING:
    from agentnb.store.memory import MemoryCheckpointer

__all__ = ["decide", "decide_task"]


def decide(
    store: MemoryCheckpointer,
    run_id: str,
    decision: str,
    approver: str,
    comment: str | None,
    expected_digest: str | None,
    identity: Identity | None,
    checks: Mapping[str, PolicyCheck] | None,
    task: str | None,
    edit: DecisionEdit | None,
) -> Decision:
    check_decision(decision, approver)
    who = store._vouch(identity)
    with store._lock:
        store._check_open()
        held = store._held.get(run_id, {})
        if task is not None or any(t.status == "pending" for t in held.values()):
            check_task_edit(edit)
            return decide_task(
                store, run_id, decision, approver, comment, expected_digest, task, edit, who, checks
            )
        found = store._runs.get(run_id)
        now = time.time()

        def audit(accepted: bool, reason: str | None) -> Decision:
            kept = edit.audit() if accepted and edit is not None else None
            record = Decision(
                edit=kept,
                id=len(store._decisions) + 1,
                run_id=run_id,
                node=found.node if found else None,
                step=found.step if found else None,
                decision=decision,
                approver=approver,
                comment=comment,
                digest_shown=expected_digest,
                pending_digest=found.pending_digest if found else None,
                accepted=accepted,
                reason=reason,
                at=now,
                identity=who,
            )
            store._decisions.append(record)
            return record

        if found is None:
            audit(False, "unknown run")
            raise RunNotFound(run_id)
        run = found

        if run.status != Status.PENDING:
            audit(False, f"not pending: {run.status}")
            raise ApprovalNotPending(run_id, run.status, run.decided_by)
        found_refusal = _refusal(store, run, who, decision, approver, checks)
        if found_refusal is not None:
            if found_refusal.unavailable is not None:
                audit(False, f"policy unavailable: {found_refusal.reason}")
                raise PolicyUnavailable(run_id, run.node, who.name, found_refusal.unavailable)
            audit(False, f"not authorized: {found_refusal.reason}")
            raise NotAuthorized(run_id, run.node, who.name, found_refusal.reason)
        if expected_digest is not None and expected_digest != run.pending_digest:
            audit(False, "stale: the pending state changed")
            raise StaleApproval(run_id, expected_digest, run.pending_digest or "")
        if decision != "approved":
            edit = None
        payload = {"by": approver, "identity": who.name, "comment": comment}
        payload["digest"] = run.pending_digest
        if edit is not None:
            payload.update(edit.audit())
            if edit.state_json is not None:
                saved = store._checkpoints[run_id]
                saved[run.step] = Row(run.node, SNAPSHOT, edit.state_json, now, edit.tasks_json)
            if edit.answer_key is not None and edit.answer_json is not None:
                answer = Effect(
                    edit.answer_key,
                    run_id,
                    run.step,
                    run.node,
                    "answer",
                    loads(edit.answer_json),
                    now,
                )
                store._effects.setdefault(edit.answer_key, (answer, edit.answer_json))
        event = Event(
            run_id=run_id,
            seq=run.seq + 1,
            step=run.step,
            type=EventType.APPROVED if decision == "approved" else EventType.REJECTED,
            node=run.node,
            payload=payload,
            at=now,
        )
        store._events[run_id].append(event)
        store._runs[run_id] = dataclasses.replace(
            run,
            status=decision_status(decision),
            seq=event.seq,
            decided_by=approver,
            decided_at=now,
            updated_at=now,
        )
        return audit(True, None)


def decide_task(
    store: MemoryCheckpointer,
    run_id: str,
    decision: str,
    approver: str,
    comment: str | None,
    expected_digest: str | None,
    task: str | None,
    edit: DecisionEdit | None,
    who: Identity,
    checks: Mapping[str, PolicyCheck] | None,
) -> Decision:
    """Decide one held task of a superstep exactly once (the caller holds the lock)."""
    now = time.time()
    run = store._runs.get(run_id)
    held = store._held.get(run_id, {})
    waiting = [t for t in held.values() if t.status == "pending"]
    if task is None and len(waiting) == 1:
        task = waiting[0].task_id
    found = next((t for t in waiting if t.task_id == task), None)
    ok = (
        run is not None
        and run.status == Status.PENDING
        and found is not None
        and expected_digest in (None, found.digest)
    )

    def audit(accepted: bool, reason: str | None) -> Decision:
        record = Decision(
            len(store._decisions) + 1,
            run_id,
            task,
            found.step if found else (run.step if run else None),
            decision,
            approver,
            comment,
            expected_digest,
            found.digest if found and accepted else None,
            accepted,
            reason,
            now,
            edit.audit() if accepted and edit is not None else None,
            identity=who,
        )
        store._decisions.append(record)
        return record

    if run is None:
        audit(False, "unknown run")
        raise RunNotFound(run_id)
    if not ok or found is None:
        refusal, reason = task_refusal(run_id, task, list(held.values()), run, expected_digest)
        audit(False, reason)
        raise refusal
    at_task = dataclasses.replace(run, node=found.node)
    denied = _refusal(store, at_task, who, decision, approver, checks)
    if denied is not None:
        if denied.unavailable is not None:
            audit(False, f"policy unavailable: {denied.reason}")
            raise PolicyUnavailable(run_id, found.node, who.name, denied.unavailable)
        audit(False, f"not authorized: {denied.reason}")
        raise NotAuthorized(run_id, found.node, who.name, denied.reason)
    edited = edit if decision == "approved" and edit is not None else None
    conflict = edit_conflict(run_id, edited, found.task_id, list(held.values()))
    if conflict is not None:
        audit(False, conflict[1])
        raise conflict[0]
    held[found.step, found.task_id] = dataclasses.replace(
        found,
        status=decision,
        decided_by=approver,
        decided_at=now,
        update=None if edited is None else edited.update,
        replaces=() if edited is None else edited.replaces,
    )
    payload = {"by": approver, "identity": who.name, "comment": comment}
    payload.update(digest=found.digest, task=task)
    if edit is not None:
        payload.update(edit.audit())
        if edit.answer_key is not None and edit.answer_json is not None:
            answer = Effect(
                edit.answer_key,
                run_id,
                found.step,
                found.node,
                "answer",
                loads(edit.answer_json),
                now,
            )
            store._effects.setdefault(edit.answer_key, (answer, edit.answer_json))
    kind = EventType.APPROVED if decision == "approved" else EventType.REJECTED
    event = Event(run_id, run.seq + 1, run.step, kind, found.node, payload, now)
    store._events[run_id].append(event)
    settled = decision == "rejected" or len(waiting) == 1
    store._runs[run_id] = dataclasses.replace(
        run,
        status=decision_status(decision) if settled else run.status,
        seq=event.seq,
        decided_by=approver if settled else run.decided_by,
        decided_at=now if settled else run.decided_at,
        updated_at=now,
    )
    return audit(True, None)


def _refusal(
    store: MemoryCheckpointer,
    run: RunRecord,
    who: Identity,
    decision: str,
    approver: str,
    checks: Mapping[str, PolicyCheck] | None,
) -> Refusal | None:
    policy = store._policies.get(run.run_id)
    if policy is None:
        return None
    paused = next(
        (e for e in reversed(store._events[run.run_id]) if e.type == EventType.INTERRUPTED),
        None,
    )
    applying = policy.applying(run.node, None if paused is None else paused.payload.get("after"))
    if not applying:
        return None

    def pending() -> PendingRun:
        saved = store._checkpoints[run.run_id]
        return PendingRun(
            run.run_id,
            run.graph,
            run.node,
            run.step,
            state(saved, max(saved)),
            policy.started_by,
            decision,
            approver,
        )

    return refusal(applying, who, policy.started_by, checks or {}, pending)
