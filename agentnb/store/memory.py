"""``MemoryCheckpointer``: the contract in a dict, for tests, teaching and throwaway runs.

It keeps the same rules as the SQLite backend — leases with fencing, exactly-once
decisions, an audit of refused attempts — within one process. State is kept as JSON text,
so what comes back is a fresh copy, exactly as from a database.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datetime

from agentnb._aio import Wakeup
from agentnb._json import loads
from agentnb.errors import (
    LeaseLost,
    RunBusy,
    RunNotFound,
    StoreError,
)
from agentnb.store import chains
from agentnb.store.base import (
    Checkpointer,
    CheckpointWrite,
    DecisionEdit,
    StepCommit,
    owner_is_dead,
)
from agentnb.store.chains import SNAPSHOT
from agentnb.store.decisions import Ask, Pause, Verdict, approver_name, check_decision, verdict
from agentnb.store.memory_rows import Row, state

if TYPE_CHECKING:
    from agentnb.fsm.memory import MemoryMachineStore
from agentnb.identity import Identity, IdentityProvider, check_provider
from agentnb.store.claims import WAITING, TimerClaim, claimable
from agentnb.store.history import CheckpointInfo
from agentnb.store.policy import (
    ApproverPolicy,
    PolicyCheck,
    RunPolicy,
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
from agentnb.store.retention import Pruned, check_deletable, cutoff, prunable_statuses, selected

__all__ = ["MemoryCheckpointer"]


class MemoryCheckpointer(Checkpointer):
    """Runs kept in this process's memory; gone when it exits.

    Args:
        identity: who this process is (a ``callable() -> Identity``) for runs started and
            decisions made through this store; JupyterHub's user or the OS user by default.

    Example:
        >>> from agentnb import MemoryCheckpointer, StateGraph
        >>> store = MemoryCheckpointer()
        >>> graph = StateGraph("one").add_node("a", lambda state: {"x": 1}).set_entry_point("a")
        >>> graph.compile(store).start({}, run_id="r1").run().state
        {'x': 1}
        >>> [record.run_id for record in store.list_runs()]
        ['r1']
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
        self._checkpoints: dict[str, dict[int, Row]] = {}
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
                checkpoint.step: Row(
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
                self._checkpoints[run_id][cp.step] = Row(cp.node, kind, body, now, cp.tasks_json)
            if change.settles is not None or change.holds:  # (a linear step does neither)
                self._settle_and_hold(run_id, change)
            self._events[run_id].extend(change.events)
            # Built directly, field by field in their order (tests/store/test_memory.py
            # pins that none is left out): by keyword the class's __init__ is reached
            # through a dict of 17 names, 7,900 instructions of a 112,000-instruction step
            # (bench_instructions); dataclasses.replace costs more still.
            self._runs[run_id] = RunRecord(
                run.run_id,
                run.graph,
                run.shape,
                change.status,
                change.node,
                change.step,
                change.events[-1].seq,
                run.max_steps,
                run.created_at,
                now,  # updated_at
                change.error,
                change.pending_digest,
                run.decided_by,
                run.decided_at,
                None if change.release else run.lease_owner,
                None if change.release else now + lease_seconds,  # lease_expires
                run.fence,
            )

    def _settle_and_hold(self, run_id: str, change: StepCommit) -> None:
        """Delete the pending writes and held tasks of the supersteps ``change`` settles;
        save the tasks it holds as pending approvals (a task held already keeps its row),
        their superstep's pending writes keeping only their deltas."""
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
                claims.append(
                    TimerClaim(iid, machine, fire_at, owner, leased + lease_seconds, moment)
                )
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
        by: str | None = None,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
        identity: Identity | None = None,
        checks: Mapping[str, PolicyCheck] | None = None,
        task: str | None = None,
        edit: DecisionEdit | None = None,
        approver: str | None = None,
    ) -> Decision:
        # The rules are agentnb.store.decisions'; the lock makes this decision the one
        # change of the run, as the SQL stores' transaction does.
        name = approver_name(by, approver, "decide")
        check_decision(decision, name)
        who = self._vouch(identity)
        ask = Ask(run_id, decision, name, who, comment, expected_digest, task, edit, checks or {})
        try:
            with self._lock:
                self._check_open()
                found = verdict(self._pause(run_id), ask, time.time())
                if found.accepted:
                    self._apply(found)
                record = found.record(len(self._decisions) + 1)
                self._decisions.append(record)
        finally:  # an approval makes the run claimable: tell idle workers
            self._work.set()
        if found.error is not None:
            raise found.error
        return record

    def _pause(self, run_id: str) -> Pause:
        """The facts a decision about ``run_id`` is checked against (the lock is held)."""
        run = self._runs.get(run_id)
        if run is None:
            return Pause(None)

        def after() -> str | None:
            paused = (e for e in reversed(self._events[run_id]) if e.type == EventType.INTERRUPTED)
            return next((e.payload.get("after") for e in paused), None)

        def pending_state() -> dict[str, Any]:
            saved = self._checkpoints[run_id]
            return state(saved, max(saved))

        held = list(self._held.get(run_id, {}).values())
        policy = self._policies.get(run_id, RunPolicy())
        return Pause(run, held, policy, after, pending_state)

    def _apply(self, accepted: Verdict) -> None:
        """Write what an accepted decision changes (the lock is held)."""
        ask, at, event = accepted.ask, accepted.at, accepted.event
        assert event is not None
        run = self._runs[ask.run_id]
        edit = accepted.edit
        if edit is not None and edit.state_json is not None:  # the pending step, edited
            row = Row(run.node, SNAPSHOT, edit.state_json, at, edit.tasks_json)
            self._checkpoints[ask.run_id][run.step] = row
        if edit is not None and edit.answer_key is not None and edit.answer_json is not None:
            answer = Effect(
                edit.answer_key,
                ask.run_id,
                accepted.step or 0,
                event.node or "",
                "answer",
                loads(edit.answer_json),
                at,
            )
            self._effects.setdefault(edit.answer_key, (answer, edit.answer_json))
        if accepted.task is not None:
            held = accepted.task
            self._held.setdefault(ask.run_id, {})[held.step, held.task_id] = held
        self._events[ask.run_id].append(event)
        settled = accepted.status is not None
        self._runs[ask.run_id] = dataclasses.replace(
            run,
            status=accepted.status or run.status,
            seq=event.seq,
            decided_by=ask.by if settled else run.decided_by,
            decided_at=at if settled else run.decided_at,
            updated_at=at,
        )

    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        with self._lock:
            self._get(run_id)
            saved = self._checkpoints[run_id]
            at_step = max(saved) if step is None else step
            if at_step not in saved:
                raise StoreError(f"run {run_id!r} has no checkpoint at step {step}")
            found = saved[at_step]
            value = state(saved, at_step)
        tasks = found.tasks
        return Checkpoint(
            run_id, at_step, found.node, value, found.at, loads(tasks) if tasks else None
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

    def delete_run(
        self, run_id: str, *, include_audit: bool = False, awaiting: bool = False
    ) -> Pruned:
        with self._lock:  # checked and deleted under it, as the SQL stores do in one transaction
            check_deletable(self._get(run_id), awaiting=awaiting)
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

    def _delete(self, run_id: str, include_audit: bool) -> int:
        """Delete ``run_id`` (the lock is held and the run checked); the audit lines gone."""
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
