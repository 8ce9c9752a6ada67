"""``MemoryCheckpointer``: the contract in a dict, for tests, teaching and throwaway runs.

It keeps the same rules as the SQLite backend — leases with fencing, exactly-once
decisions, an audit of refused attempts — within one process. State is kept as JSON text,
so what comes back is a fresh copy, exactly as from a database.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import datetime

from agentnb._aio import Wakeup
from agentnb._json import loads
from agentnb.errors import (
    ApprovalNotPending,
    LeaseLost,
    NotAuthorized,
    PolicyUnavailable,
    RunBusy,
    RunNotFound,
    StaleApproval,
    StoreError,
)
from agentnb.store import chains
from agentnb.store.base import (
    Checkpointer,
    CheckpointWrite,
    DecisionEdit,
    StepCommit,
    check_decision,
    check_task_edit,
    decision_status,
    edit_conflict,
    owner_is_dead,
    task_refusal,
)
from agentnb.store.chains import SNAPSHOT

if TYPE_CHECKING:
    from agentnb.fsm.memory import MemoryMachineStore
from agentnb.identity import Identity, IdentityProvider, check_provider
from agentnb.store.claims import WAITING, TimerClaim, claimable
from agentnb.store.history import CheckpointInfo
from agentnb.store.policy import (
    ApproverPolicy,
    PendingRun,
    PolicyCheck,
    Refusal,
    RunPolicy,
    refusal,
)
from agentnb.store.records import (
    Checkpoint,
    Decision,
    Effect,
    Event,
    EventType,
    PendingTask,
    PendingWrite,
    RunRecord,
    Status,
)
from agentnb.store.retention import (
    Pruned,
    check_deletable,
    cutoff,
    prunable_statuses,
    selected,
)

__all__ = ["MemoryCheckpointer"]


class MemoryCheckpointer(Checkpointer):
    """Runs kept in this process's memory; gone when it exits.

    Args:
        identity: who this process is (a ``callable() -> Identity``) for runs started and
            decisions made through this store; JupyterHub's user or the OS user by default.
    """

    blocking = False  # its calls only take its own lock: the async twins await nothing

    def __init__(self, *, identity: IdentityProvider | None = None) -> None:
        provider = check_provider(identity, "MemoryCheckpointer")
        if provider is not None:
            self.identity = provider
        self._policies: dict[str, RunPolicy] = {}
        self._lock = threading.RLock()
        self._runs: dict[str, RunRecord] = {}
        # run -> step -> (node, kind, body, at, tasks): rows of agentnb.store.chains
        self._checkpoints: dict[str, dict[int, _Row]] = {}
        self._writes: dict[tuple[str, int], dict[str, PendingWrite]] = {}
        self._held: dict[str, dict[tuple[int, str], PendingTask]] = {}
        self._events: dict[str, list[Event]] = {}
        self._decisions: list[Decision] = []
        self._effects: dict[str, tuple[Effect, str]] = {}
        self._closed = False
        self._machines: MemoryMachineStore | None = None
        self._work = Wakeup()  # set by writes that may make a run claimable
        self._claimed_at: dict[str, int] = {}  # owner -> the wake-up generation it last saw
        self._timer_leases: dict[str, tuple[str, float]] = {}  # instance -> (owner, expires)

    def __repr__(self) -> str:
        return f"<MemoryCheckpointer: {len(self._runs)} runs>"

    @property
    def machines(self) -> MemoryMachineStore:
        """State-machine instances kept beside the runs, in memory."""
        from agentnb.fsm.memory import MemoryMachineStore

        if self._machines is None:
            self._machines = MemoryMachineStore()
        return self._machines

    def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("this MemoryCheckpointer is closed; create a new one")

    def _get(self, run_id: str) -> RunRecord:
        self._check_open()
        try:
            return self._runs[run_id]
        except KeyError:
            raise RunNotFound(run_id) from None

    def create_run(
        self,
        run: RunRecord,
        checkpoint: CheckpointWrite,
        events: Sequence[Event],
        *,
        started_by: Identity | None = None,
        policies: Mapping[str, ApproverPolicy] | None = None,
    ) -> None:
        with self._lock:
            self._check_open()
            if run.run_id in self._runs:
                raise StoreError(f"a run with id {run.run_id!r} already exists; pick a new id")
            self._runs[run.run_id] = run
            self._checkpoints[run.run_id] = {
                checkpoint.step: _Row(
                    checkpoint.node,
                    SNAPSHOT,
                    checkpoint.state_json,
                    run.created_at,
                    checkpoint.tasks_json,
                )
            }
            self._events[run.run_id] = list(events)
            if started_by is not None or policies:
                self._policies[run.run_id] = RunPolicy(started_by, dict(policies or {}))
        if run.status in WAITING:
            self._work.set()

    def run_policy(self, run_id: str) -> RunPolicy:
        with self._lock:
            self._get(run_id)
            return self._policies.get(run_id, RunPolicy())

    def get_run(self, run_id: str) -> RunRecord:
        with self._lock:
            return self._get(run_id)

    def list_runs(self, status: Status | str | None = None) -> list[RunRecord]:
        with self._lock:
            self._check_open()
            runs = [r for r in self._runs.values() if status is None or r.status == status]
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    def acquire(self, run_id: str, owner: str, *, lease_seconds: float = 30.0) -> RunRecord:
        with self._lock:
            run = self._get(run_id)
            now = time.time()
            held = run.lease_owner not in (None, owner)
            if held and (run.lease_expires or 0) > now and not owner_is_dead(run.lease_owner):
                raise RunBusy(run_id, run.lease_owner or "?", run.lease_expires or now)
            run = dataclasses.replace(
                run, lease_owner=owner, lease_expires=now + lease_seconds, fence=run.fence + 1
            )
            self._runs[run_id] = run
            return run

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        with self._lock:
            run = self._get(run_id)
            if run.fence != fence or run.lease_owner is None:
                raise LeaseLost(run_id, fence)
            if not change.events:
                raise StoreError("a commit must carry at least one event")
            now = time.time()
            if change.checkpoint is not None:
                cp = change.checkpoint
                kind, body = chains.row(cp)
                self._checkpoints[run_id][cp.step] = _Row(cp.node, kind, body, now, cp.tasks_json)
            held = self._held.setdefault(run_id, {})
            if change.settles is not None:
                for key in [k for k in self._writes if k[0] == run_id and k[1] <= change.settles]:
                    del self._writes[key]
                for k in [k for k in held if k[0] <= change.settles]:
                    del held[k]
            if change.holds:
                saved = self._writes.get((run_id, change.step), {})
                for task_id, write in saved.items():
                    saved[task_id] = dataclasses.replace(write, events=[])
            for task_id, node, digest in change.holds:
                held.setdefault(
                    (change.step, task_id),
                    PendingTask(run_id, change.step, task_id, node, digest, "pending"),
                )
            self._events[run_id].extend(change.events)
            # Built directly (every field named; tests/store/test_memory.py pins the list):
            # dataclasses.replace costs nearly twice as much, and this runs every step.
            self._runs[run_id] = RunRecord(
                run_id=run.run_id,
                graph=run.graph,
                shape=run.shape,
                status=change.status,
                node=change.node,
                step=change.step,
                seq=change.events[-1].seq,
                max_steps=run.max_steps,
                created_at=run.created_at,
                updated_at=now,
                error=change.error,
                pending_digest=change.pending_digest,
                decided_by=run.decided_by,
                decided_at=run.decided_at,
                lease_owner=None if change.release else run.lease_owner,
                lease_expires=None if change.release else now + lease_seconds,
                fence=run.fence,
            )

    def save_write(self, run_id: str, fence: int, write: PendingWrite) -> None:
        with self._lock:
            run = self._get(run_id)
            if run.fence != fence or run.lease_owner is None:
                raise LeaseLost(run_id, fence)
            self._writes.setdefault((run_id, write.step), {}).setdefault(write.task_id, write)

    def pending_writes(self, run_id: str, step: int) -> list[PendingWrite]:
        with self._lock:
            self._get(run_id)
            saved = list(self._writes.get((run_id, step), {}).values())
        return sorted(saved, key=lambda w: (w.at, w.task_id))

    def pending_tasks(self, run_id: str) -> list[PendingTask]:
        with self._lock:
            self._get(run_id)
            held = self._held.get(run_id, {})
            return [held[k] for k in sorted(held)]

    def release(self, run_id: str, fence: int) -> None:
        with self._lock:
            run = self._get(run_id)
            if run.fence == fence:
                self._runs[run_id] = dataclasses.replace(run, lease_owner=None, lease_expires=None)
        if run.status in WAITING:
            self._work.set()

    # -- claiming work (rules: agentnb.store.claims) ---------------------------------------

    def claim(
        self,
        owner: str,
        graphs: Mapping[str, str],
        *,
        limit: int = 1,
        lease_seconds: float = 30.0,
        run_ids: Sequence[str] | None = None,
    ) -> list[RunRecord]:
        with self._lock:
            self._check_open()
            self._claimed_at[owner] = self._work.generation  # await_work counts from here
            now = time.time()
            found = sorted(
                (r for r in self._runs.values() if claimable(r, graphs, now, run_ids)),
                key=lambda r: (r.updated_at, r.run_id),
            )[: max(limit, 0)]
            claimed = []
            for run in found:
                run = dataclasses.replace(
                    run, lease_owner=owner, lease_expires=now + lease_seconds, fence=run.fence + 1
                )
                self._runs[run.run_id] = run
                claimed.append(run)
            return claimed

    def renew(
        self, owner: str, run_ids: Sequence[str], *, lease_seconds: float = 30.0
    ) -> list[str]:
        with self._lock:
            self._check_open()
            until = time.time() + lease_seconds
            held = []
            for run_id in run_ids:
                run = self._runs.get(run_id)
                if run is not None and run.lease_owner == owner:
                    self._runs[run_id] = dataclasses.replace(run, lease_expires=until)
                    held.append(run_id)
            return held

    def requeue(self, run_id: str, fence: int) -> bool:
        with self._lock:
            run = self._get(run_id)
            if run.fence != fence or run.lease_owner is not None or run.status != Status.RUNNING:
                return False
            self._runs[run_id] = dataclasses.replace(
                run, status=Status.QUEUED, updated_at=time.time()
            )
        self._work.set()
        return True

    def claim_timers(
        self,
        owner: str,
        machines: Sequence[str],
        *,
        limit: int = 1,
        lease_seconds: float = 30.0,
        now: float | None = None,
    ) -> list[TimerClaim]:
        moment = time.time() if now is None else now
        with self._lock:
            self._check_open()
            self._claimed_at[owner] = self._work.generation
            leased = time.time()
            claims: list[TimerClaim] = []
            for iid, machine, fire_at in self.machines.due(moment):
                held = self._timer_leases.get(iid)
                if machine not in machines or (held is not None and held[1] > leased):
                    continue
                if len(claims) >= limit:
                    break
                self._timer_leases[iid] = (owner, leased + lease_seconds)
                claims.append(TimerClaim(iid, machine, fire_at, owner, leased + lease_seconds))
            return claims

    def release_timers(self, instance_id: str, owner: str) -> None:
        with self._lock:
            held = self._timer_leases.get(instance_id)
            if held is not None and held[0] == owner:
                del self._timer_leases[instance_id]

    async def await_work(self, owner: str, timeout: float) -> None:
        await self._work.wait(timeout, after=self._claimed_at.get(owner, 0))

    def decide(
        self,
        run_id: str,
        decision: str,
        approver: str,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
        identity: Identity | None = None,
        checks: Mapping[str, PolicyCheck] | None = None,
        task: str | None = None,
        edit: DecisionEdit | None = None,
    ) -> Decision:
        try:
            return self._decide(
                run_id, decision, approver, comment, expected_digest, identity, checks, task, edit
            )
        finally:  # an approval makes the run claimable: tell idle workers
            self._work.set()

    def _decide(
        self,
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
        who = self._vouch(identity)
        with self._lock:
            self._check_open()
            held = self._held.get(run_id, {})
            if task is not None or any(t.status == "pending" for t in held.values()):
                check_task_edit(edit)
                return self._decide_task(
                    run_id, decision, approver, comment, expected_digest, task, edit, who, checks
                )
            found = self._runs.get(run_id)
            now = time.time()

            def audit(accepted: bool, reason: str | None) -> Decision:
                kept = edit.audit() if accepted and edit is not None else None
                record = Decision(
                    edit=kept,
                    id=len(self._decisions) + 1,
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
                self._decisions.append(record)
                return record

            if found is None:
                audit(False, "unknown run")
                raise RunNotFound(run_id)
            run = found

            if run.status != Status.PENDING:
                audit(False, f"not pending: {run.status}")
                raise ApprovalNotPending(run_id, run.status, run.decided_by)
            found_refusal = self._refusal(run, who, decision, approver, checks)
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
                    saved = self._checkpoints[run_id]
                    saved[run.step] = _Row(
                        run.node, SNAPSHOT, edit.state_json, now, edit.tasks_json
                    )
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
                    self._effects.setdefault(edit.answer_key, (answer, edit.answer_json))
            event = Event(
                run_id=run_id,
                seq=run.seq + 1,
                step=run.step,
                type=EventType.APPROVED if decision == "approved" else EventType.REJECTED,
                node=run.node,
                payload=payload,
                at=now,
            )
            self._events[run_id].append(event)
            self._runs[run_id] = dataclasses.replace(
                run,
                status=decision_status(decision),
                seq=event.seq,
                decided_by=approver,
                decided_at=now,
                updated_at=now,
            )
            return audit(True, None)

    def _decide_task(
        self,
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
        run = self._runs.get(run_id)
        held = self._held.get(run_id, {})
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
                len(self._decisions) + 1,
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
            self._decisions.append(record)
            return record

        if run is None:
            audit(False, "unknown run")
            raise RunNotFound(run_id)
        if not ok or found is None:
            refusal, reason = task_refusal(run_id, task, list(held.values()), run, expected_digest)
            audit(False, reason)
            raise refusal
        at_task = dataclasses.replace(run, node=found.node)
        denied = self._refusal(at_task, who, decision, approver, checks)
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
                self._effects.setdefault(edit.answer_key, (answer, edit.answer_json))
        kind = EventType.APPROVED if decision == "approved" else EventType.REJECTED
        event = Event(run_id, run.seq + 1, run.step, kind, found.node, payload, now)
        self._events[run_id].append(event)
        settled = decision == "rejected" or len(waiting) == 1
        self._runs[run_id] = dataclasses.replace(
            run,
            status=decision_status(decision) if settled else run.status,
            seq=event.seq,
            decided_by=approver if settled else run.decided_by,
            decided_at=now if settled else run.decided_at,
            updated_at=now,
        )
        return audit(True, None)

    def _refusal(
        self,
        run: RunRecord,
        who: Identity,
        decision: str,
        approver: str,
        checks: Mapping[str, PolicyCheck] | None,
    ) -> Refusal | None:
        policy = self._policies.get(run.run_id)
        if policy is None:
            return None
        paused = next(
            (e for e in reversed(self._events[run.run_id]) if e.type == EventType.INTERRUPTED),
            None,
        )
        applying = policy.applying(
            run.node, None if paused is None else paused.payload.get("after")
        )
        if not applying:
            return None

        def pending() -> PendingRun:
            saved = self._checkpoints[run.run_id]
            return PendingRun(
                run.run_id,
                run.graph,
                run.node,
                run.step,
                _state(saved, max(saved)),
                policy.started_by,
                decision,
                approver,
            )

        return refusal(applying, who, policy.started_by, checks or {}, pending)

    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        with self._lock:
            self._get(run_id)
            saved = self._checkpoints[run_id]
            at_step = max(saved) if step is None else step
            if at_step not in saved:
                raise StoreError(f"run {run_id!r} has no checkpoint at step {step}")
            found = saved[at_step]
            state = _state(saved, at_step)
        tasks = found.tasks
        return Checkpoint(
            run_id, at_step, found.node, state, found.at, loads(tasks) if tasks else None
        )

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        with self._lock:
            self._get(run_id)
            saved = sorted(self._checkpoints[run_id].items())
        states = chains.rebuild_all([(s, r.kind, r.body) for s, r in saved])
        return [
            Checkpoint(run_id, s, r.node, state, r.at, loads(r.tasks) if r.tasks else None)
            for (s, r), state in zip(saved, states, strict=True)
        ]

    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        with self._lock:
            self._get(run_id)
            events = [e for e in self._events[run_id] if e.seq > after]
        return events if limit is None else events[:limit]

    def decisions(self, run_id: str | None = None) -> list[Decision]:
        with self._lock:
            self._check_open()
            return [d for d in self._decisions if run_id is None or d.run_id == run_id]

    def recorded_effect(self, key: str) -> str | None:
        with self._lock:
            self._check_open()
            found = self._effects.get(key)
        return None if found is None else found[1]

    def record_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        with self._lock:
            self._check_open()
            if key not in self._effects:
                effect = Effect(key, run_id, step, node, name, loads(result_json), time.time())
                self._effects[key] = (effect, result_json)
            return self._effects[key][1]

    def effects(self, run_id: str) -> list[Effect]:
        with self._lock:
            self._check_open()
            return [e for e, _ in self._effects.values() if e.run_id == run_id]

    # -- history and retention (rules: agentnb.store.retention) ----------------------------

    def list_checkpoints(self, run_id: str) -> list[CheckpointInfo]:
        with self._lock:
            self._get(run_id)
            saved = sorted(self._checkpoints[run_id].items())
        return [CheckpointInfo(run_id, step, row.node, row.at) for step, row in saved]

    def _delete(self, run_id: str, include_audit: bool) -> int:
        """Delete ``run_id`` (the caller holds the lock and has checked it)."""
        del self._runs[run_id]
        for per_run in (self._checkpoints, self._events, self._policies, self._held):
            per_run.pop(run_id, None)
        for write in [k for k in self._writes if k[0] == run_id]:
            del self._writes[write]
        for key in [k for k, (effect, _) in self._effects.items() if effect.run_id == run_id]:
            del self._effects[key]
        if not include_audit:
            return 0
        kept = [d for d in self._decisions if d.run_id != run_id]
        deleted = len(self._decisions) - len(kept)
        self._decisions = kept
        return deleted

    def delete_run(self, run_id: str, *, include_audit: bool = False) -> Pruned:
        with self._lock:
            check_deletable(self._get(run_id))
            return Pruned((run_id,), self._delete(run_id, include_audit))

    def prune(
        self,
        *,
        before: float | datetime.datetime,
        status: Status | str | None = None,
        include_audit: bool = False,
    ) -> Pruned:
        until = cutoff(before)
        statuses = prunable_statuses(status)
        with self._lock:
            self._check_open()
            chosen = sorted(
                (r for r in self._runs.values() if selected(r, statuses, until)),
                key=lambda r: r.created_at,
            )
            audit = sum(self._delete(r.run_id, include_audit) for r in chosen)
            if include_audit:  # and the audit kept by earlier prunes, now old enough
                kept = [d for d in self._decisions if d.at >= until or d.run_id in self._runs]
                audit += len(self._decisions) - len(kept)
                self._decisions = kept
        return Pruned(tuple(r.run_id for r in chosen), audit)


class _Row(NamedTuple):
    """One stored checkpoint: a row of :mod:`agentnb.store.chains`."""

    node: str
    kind: str
    body: str
    at: float
    tasks: str | None


def _state(saved: Mapping[int, _Row], step: int) -> dict[str, Any]:
    """The state at ``step``: its row and the rows before it, back to a snapshot."""

    def newest_first() -> Iterator[tuple[int, str | None, str]]:
        for at in range(step, min(saved) - 1, -1):
            found = saved.get(at)
            if found is None:
                return
            yield at, found.kind, found.body

    return chains.rebuild(newest_first())
