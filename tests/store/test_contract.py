"""The checkpointer contract: one suite, run against every backend (the ``store`` fixture)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentnb import (
    ApprovalNotPending,
    Checkpointer,
    Identity,
    InvalidDecision,
    MemoryCheckpointer,
    NotAuthorized,
    PolicyUnavailable,
    RunBusy,
    RunNotFound,
    SqliteCheckpointer,
    StaleApproval,
    StateGraph,
    Status,
)
from agentnb.errors import DecisionError, LeaseLost, StoreError
from agentnb.examples import build_refund_workflow
from agentnb.graph.run import Run
from agentnb.store import PendingRun
from agentnb.store.base import CheckpointWrite, StepCommit, new_owner
from agentnb.store.records import Event, PendingWrite, RunRecord


@pytest.fixture(params=["sync", "async"])
def store_face(request: pytest.FixtureRequest) -> str:
    """Every test here again through the awaitable twins (``async_face``, tests/conftest.py)."""
    return str(request.param)


def pending_run(store: Checkpointer, refunds: list[int] | None = None) -> Run:
    run = build_refund_workflow(store, refunds).start({"requested": 1000})
    run.run()
    assert run.status == Status.PENDING
    return run


def record(run_id: str = "r1", **changes: object) -> RunRecord:
    now = time.time()
    fields: dict[str, object] = {
        "run_id": run_id,
        "graph": "g",
        "shape": "s",
        "status": Status.RUNNING,
        "node": "a",
        "step": 0,
        "seq": 1,
        "max_steps": 5,
        "created_at": now,
        "updated_at": now,
    }
    fields.update(changes)
    return RunRecord(**fields)  # type: ignore[arg-type]


def started(run_id: str = "r1") -> list[Event]:
    return [Event(run_id, 1, 0, "run_started", "a", {"x": 1}, time.time())]


def test_created_run_reads_back_with_its_checkpoint_and_events(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", '{"x":1}'), started())
    run = store.get_run("r1")
    assert (run.status, run.node, run.step, run.seq) == (Status.RUNNING, "a", 0, 1)
    assert store.checkpoint("r1").state == {"x": 1}
    assert [e.type for e in store.events("r1")] == ["run_started"]
    assert store.events("r1")[0].payload == {"x": 1}


def test_interruptions_are_the_latest_interrupted_event_or_the_latest_of_each_task(
    store: Checkpointer,
) -> None:
    now = time.time()
    asked = [
        Event("r1", seq, 0, "interrupted", "a", {"task": task}, now)
        for seq, task in ((2, "t1"), (3, "t2"), (4, "t1"))
    ]
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), [*started(), *asked])
    assert {k: e.seq for k, e in store.interruptions("r1").items()} == {"": 4}
    assert {k: e.seq for k, e in store.interruptions("r1", ["t1", "t2"]).items()} == {
        "t1": 4,
        "t2": 3,
    }
    assert store.interruptions("r1", ["t3"]) == {}


def test_a_run_id_cannot_be_created_twice(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    with pytest.raises(StoreError, match="already exists"):
        store.create_run(record(), CheckpointWrite(0, "a", '{"y":2}'), started())
    assert store.checkpoint("r1").state == {}


def test_unknown_runs_raise_run_not_found_everywhere(store: Checkpointer) -> None:
    for call in (
        lambda: store.get_run("nope"),
        lambda: store.events("nope"),
        lambda: store.checkpoint("nope"),
        lambda: store.checkpoints("nope"),
        lambda: store.acquire("nope", "me"),
        lambda: store.decide("nope", "approved", "ada"),
    ):
        with pytest.raises(RunNotFound, match="nope"):
            call()
    assert [(d.run_id, d.accepted, d.reason) for d in store.decisions()] == [
        ("nope", False, "unknown run")
    ]


def test_reads_return_copies_that_callers_cannot_corrupt(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", '{"items":[1]}'), started())
    store.checkpoint("r1").state["items"].append(2)
    assert store.checkpoint("r1").state == {"items": [1]}


def test_lease_is_exclusive_until_released_and_each_acquire_bumps_the_fence(
    store: Checkpointer,
) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    first = store.acquire("r1", "host:1:a", lease_seconds=30)
    with pytest.raises(RunBusy) as busy:
        store.acquire("r1", "other:2:b", lease_seconds=30)
    assert busy.value.owner == "host:1:a"
    again = store.acquire("r1", "host:1:a", lease_seconds=30)
    assert again.fence == first.fence + 1
    store.release("r1", again.fence)
    assert store.acquire("r1", "other:2:b").fence == again.fence + 1


def test_an_expired_lease_can_be_taken_over_and_fences_out_the_old_owner(
    store: Checkpointer,
) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    old = store.acquire("r1", "elsewhere:1:a", lease_seconds=0.01)
    time.sleep(0.02)  # let the lease expire: the expiry itself is under test
    new = store.acquire("r1", "elsewhere:2:b", lease_seconds=30)
    assert new.fence > old.fence
    late_events = [Event("r1", 2, 1, "state_update", "a", {}, time.time())]
    late = StepCommit(Status.RUNNING, "b", 1, late_events, CheckpointWrite(1, "b", '{"late":1}'))
    with pytest.raises(LeaseLost):
        store.commit("r1", old.fence, late, lease_seconds=30)
    assert store.checkpoints("r1")[-1].step == 0
    assert store.get_run("r1").lease_owner == "elsewhere:2:b"


def test_a_lease_held_by_a_dead_process_on_this_host_is_free_at_once(
    store: Checkpointer,
) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "from agentnb.store.base import new_owner; print(new_owner())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    store.acquire("r1", dead, lease_seconds=3600)
    assert store.acquire("r1", new_owner()).fence >= 2


def test_commit_writes_checkpoint_events_and_row_together(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    lease = store.acquire("r1", "me:1:x")
    events = [
        Event("r1", 2, 0, "node_start", "a", {}, time.time()),
        Event("r1", 3, 1, "state_update", "a", {"delta": {"k": 1}}, time.time()),
    ]
    change = StepCommit(Status.RUNNING, "b", 1, events, CheckpointWrite(1, "b", '{"k":1}'))
    store.commit("r1", lease.fence, change, lease_seconds=30)
    row = store.get_run("r1")
    assert (row.node, row.step, row.seq, row.lease_owner) == ("b", 1, 3, "me:1:x")
    assert [c.state for c in store.checkpoints("r1")] == [{}, {"k": 1}]
    assert [e.seq for e in store.events("r1")] == [1, 2, 3]
    assert [e.seq for e in store.events("r1", after=1, limit=1)] == [2]
    end = [Event("r1", 4, 1, "completed", "END", {}, time.time())]
    done = StepCommit(Status.COMPLETED, "END", 1, end, release=True)
    store.commit("r1", lease.fence, done, lease_seconds=30)
    row = store.get_run("r1")
    assert (row.status, row.node, row.seq, row.lease_owner) == ("completed", "END", 4, None)
    assert store.checkpoint("r1").state == {"k": 1}


def test_a_pending_run_is_approved_exactly_once(store: Checkpointer) -> None:
    run = pending_run(store)
    decision = store.decide(run.run_id, "approved", "ada", comment="ok")
    assert decision.accepted
    assert decision.node == "human_approval"
    assert store.get_run(run.run_id).status == Status.APPROVED
    with pytest.raises(ApprovalNotPending) as refused:
        store.decide(run.run_id, "approved", "bob")
    assert refused.value.decided_by == "ada"
    audit = store.decisions(run.run_id)
    assert [(d.approver, d.accepted) for d in audit] == [("ada", True), ("bob", False)]
    assert audit[1].reason == "not pending: approved"
    assert store.events(run.run_id)[-1].type == "approved"


def test_rejection_ends_the_run(store: Checkpointer) -> None:
    run = pending_run(store)
    store.decide(run.run_id, "rejected", "ada")
    assert store.get_run(run.run_id).status == Status.REJECTED
    assert store.events(run.run_id)[-1].type == "rejected"


@pytest.mark.parametrize(
    ("decision", "approver"),
    [("approve", "ada"), ("APPROVED", "ada"), ("", "ada"), ("yes", "ada"), ("approved", "  ")],
)
def test_an_invalid_decision_is_refused_before_touching_storage(
    store: Checkpointer, decision: str, approver: str
) -> None:
    run = pending_run(store)
    with pytest.raises(InvalidDecision):
        store.decide(run.run_id, decision, approver)
    assert store.get_run(run.run_id).status == Status.PENDING
    assert store.decisions(run.run_id) == []


def test_a_decision_bound_to_a_stale_digest_is_refused_and_audited(store: Checkpointer) -> None:
    run = pending_run(store)
    digest = store.get_run(run.run_id).pending_digest
    assert digest
    with pytest.raises(StaleApproval):
        store.decide(run.run_id, "approved", "ada", expected_digest="0" * 64)
    assert store.get_run(run.run_id).status == Status.PENDING
    assert store.decisions(run.run_id)[-1].reason == "stale: the pending state changed"
    accepted = store.decide(run.run_id, "approved", "ada", expected_digest=digest)
    assert accepted.digest_shown == digest == accepted.pending_digest


def test_list_runs_filters_by_status_newest_first(store: Checkpointer) -> None:
    wf = build_refund_workflow(store)
    small = wf.start({"requested": 10})
    small.run()
    big = pending_run(store)
    assert [r.run_id for r in store.list_runs()] == [big.run_id, small.run_id]
    assert [r.run_id for r in store.list_runs("completed")] == [small.run_id]
    assert [r.run_id for r in store.list_runs(Status.PENDING)] == [big.run_id]


def test_a_closed_store_refuses_to_work(store: Checkpointer) -> None:
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_runs()


def test_a_commit_without_events_is_refused(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    lease = store.acquire("r1", "me:1:x")
    with pytest.raises(StoreError, match="at least one event"):
        store.commit("r1", lease.fence, StepCommit(Status.RUNNING, "b", 1, []), lease_seconds=30)


def test_the_lease_is_renewed_by_steps_once_half_of_it_is_used(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    lease = store.acquire("r1", "me:1:x", lease_seconds=0.2)
    first = store.get_run("r1").lease_expires
    time.sleep(0.15)  # past half the lease: the next step must renew it
    step = [Event("r1", 2, 1, "state_update", "a", {}, time.time())]
    change = StepCommit(Status.RUNNING, "b", 1, step, CheckpointWrite(1, "b", "{}"))
    store.commit("r1", lease.fence, change, lease_seconds=0.2)
    renewed = store.get_run("r1").lease_expires
    assert first is not None
    assert renewed is not None
    assert renewed > first


def pending(task: str, step: int = 0, run_id: str = "r1") -> PendingWrite:
    event = Event(run_id, 9, step, "node_start", task, {"task": task}, time.time())
    return PendingWrite(run_id, step, task, task, {task: 1}, [event], time.time())


def test_a_saved_task_result_reads_back_and_keeps_its_first_write(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    fence = store.acquire("r1", "me").fence
    store.save_write("r1", fence, pending("b"))
    store.save_write("r1", fence, pending("c"))
    store.save_write("r1", fence, PendingWrite("r1", 0, "b", "b", {"b": 2}, [], time.time()))
    saved = {w.task_id: w for w in store.pending_writes("r1", 0)}
    assert {t: w.delta for t, w in saved.items()} == {"b": {"b": 1}, "c": {"c": 1}}
    assert saved["b"].events[0].payload == {"task": "b"}
    assert store.pending_writes("r1", 1) == []


def test_a_stale_worker_cannot_save_a_task_result(store: Checkpointer) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    old = store.acquire("r1", "me").fence
    store.acquire("r1", "me")  # a newer claim fences the old one out
    with pytest.raises(LeaseLost):
        store.save_write("r1", old, pending("b"))
    assert store.pending_writes("r1", 0) == []


def test_the_commit_that_merges_a_superstep_clears_its_pending_writes(
    store: Checkpointer,
) -> None:
    store.create_run(record(), CheckpointWrite(0, "a", "{}"), started())
    fence = store.acquire("r1", "me").fence
    store.save_write("r1", fence, pending("b"))
    event = Event("r1", 2, 1, "state_update", "b", {}, time.time())
    tasks = '{"nodes": ["c", "d"], "sends": [], "waiting": []}'
    change = StepCommit(
        Status.RUNNING, "c", 1, [event], CheckpointWrite(1, "c", '{"b":1}', tasks), settles=0
    )
    store.commit("r1", fence, change, lease_seconds=30)
    assert store.pending_writes("r1", 0) == []
    checkpoint = store.checkpoint("r1")
    assert checkpoint.tasks == {"nodes": ["c", "d"], "sends": [], "waiting": []}
    assert store.checkpoints("r1")[0].tasks is None


# -- who may decide: approver policies, checked against the vouched identity -------------

ADA = Identity("ada", groups=["staff"], source="test")
BOB = Identity("bob", groups=["staff", "finance"], source="test")
MALLORY = Identity("mallory", groups=["staff"], source="test")


def policy_run(
    store: Checkpointer,
    *,
    approvers: object = None,
    separate_duties: bool = False,
    after: bool = False,
    starter: Identity = ADA,
) -> Run:
    """A two-node run paused before ``pay`` (or after ``plan``), started by ``starter``."""
    graph = StateGraph("pay").add_node("plan", lambda s: {"amount": s["requested"]})
    graph.add_node("pay", lambda s: {"paid": s["amount"]}).add_edge("plan", "pay")
    graph.set_entry_point("plan")
    declare = graph.add_interrupt_after if after else graph.add_interrupt_before
    declare("plan" if after else "pay", approvers=approvers, separate_duties=separate_duties)  # type: ignore[arg-type]
    run = graph.compile(store, identity=lambda: starter).start({"requested": 700})
    run.run()
    assert run.status == Status.PENDING
    return run


def test_a_decision_records_the_vouched_identity_beside_the_name_given(
    store: Checkpointer,
) -> None:
    run = pending_run(store)
    decision = store.decide(run.run_id, "approved", "Ada Lovelace", identity=ADA)
    assert (decision.approver, decision.identity) == ("Ada Lovelace", ADA)
    [audited] = store.decisions(run.run_id)
    assert (audited.approver, audited.identity) == ("Ada Lovelace", ADA)
    assert store.events(run.run_id)[-1].payload["identity"] == "ada"


def test_without_an_identity_the_store_vouches_with_its_provider(tmp_path: Path) -> None:
    for store in (
        MemoryCheckpointer(identity=lambda: BOB),
        SqliteCheckpointer(tmp_path / "p.sqlite3", identity=lambda: BOB),
    ):
        with store:
            run = pending_run(store)  # a workflow without a provider uses the store's
            assert run.workflow.identity() == BOB
            assert store.run_policy(run.run_id).started_by == BOB
            assert store.decide(run.run_id, "approved", "whoever").identity == BOB
            assert store.decisions(run.run_id)[0].identity == BOB


def test_approvers_refuse_an_identity_they_do_not_name_and_change_nothing(
    store: Checkpointer,
) -> None:
    run = policy_run(store, approvers={"carol", "group:finance"})
    before = store.events(run.run_id)
    with pytest.raises(NotAuthorized) as refused:
        store.decide(run.run_id, "approved", "carol", identity=MALLORY)  # typed name: ignored
    assert isinstance(refused.value, DecisionError)
    assert (refused.value.identity, refused.value.node) == ("mallory", "pay")
    assert store.get_run(run.run_id).status == Status.PENDING
    assert store.events(run.run_id) == before
    [audited] = store.decisions(run.run_id)
    assert (audited.accepted, audited.approver, audited.identity) == (False, "carol", MALLORY)
    assert audited.reason == (
        "not authorized: mallory is not among the approvers of before:pay (carol, group:finance)"
    )
    assert store.decide(run.run_id, "approved", "bob", identity=BOB).accepted  # via the group


def test_an_approver_named_by_user_name_may_decide(store: Checkpointer) -> None:
    run = policy_run(store, approvers=["mallory"])
    assert store.decide(run.run_id, "rejected", "m", identity=MALLORY).accepted
    assert store.get_run(run.run_id).status == Status.REJECTED


def test_rejections_are_bound_by_the_policy_too(store: Checkpointer) -> None:
    run = policy_run(store, approvers={"group:finance"})
    with pytest.raises(NotAuthorized):
        store.decide(run.run_id, "rejected", "ada", identity=ADA)
    assert store.get_run(run.run_id).status == Status.PENDING


def test_separate_duties_refuses_the_identity_that_started_the_run(store: Checkpointer) -> None:
    run = policy_run(store, approvers={"group:staff"}, separate_duties=True, starter=ADA)
    assert store.run_policy(run.run_id).started_by == ADA
    with pytest.raises(NotAuthorized, match="separate duties: ada started the run"):
        store.decide(run.run_id, "approved", "someone else", identity=ADA)
    assert store.decisions(run.run_id)[-1].reason == (
        "not authorized: separate duties: ada started the run (before:pay)"
    )
    assert store.decide(run.run_id, "approved", "bob", identity=BOB).accepted


def test_separate_duties_alone_lets_anyone_but_the_starter_decide(store: Checkpointer) -> None:
    run = policy_run(store, separate_duties=True, starter=BOB)
    with pytest.raises(NotAuthorized):
        store.decide(run.run_id, "approved", "bob", identity=BOB)
    assert store.decide(run.run_id, "approved", "mallory", identity=MALLORY).accepted


def test_an_interrupt_after_a_node_is_bound_by_its_own_policy(store: Checkpointer) -> None:
    run = policy_run(store, approvers={"bob"}, after=True)
    assert store.run_policy(run.run_id).interrupts.keys() == {"after:plan"}
    with pytest.raises(NotAuthorized, match="approvers of after:plan"):
        store.decide(run.run_id, "approved", "ada", identity=ADA)
    assert store.decide(run.run_id, "approved", "bob", identity=BOB).accepted


def test_one_pause_covering_two_interrupts_needs_both_policies(store: Checkpointer) -> None:
    graph = StateGraph("two").add_node("plan", lambda s: None).add_node("pay", lambda s: None)
    graph.add_edge("plan", "pay").set_entry_point("plan")
    graph.add_interrupt_after("plan", approvers={"group:staff"})
    graph.add_interrupt_before("pay", approvers={"group:finance"})
    run = graph.compile(store, identity=lambda: ADA).start({})
    run.run()
    with pytest.raises(NotAuthorized, match="before:pay"):
        store.decide(run.run_id, "approved", "ada", identity=ADA)  # staff, not finance
    assert store.decide(run.run_id, "approved", "bob", identity=BOB).accepted  # both


def test_a_callable_policy_is_asked_with_the_identity_and_the_pending_run(
    store: Checkpointer,
) -> None:
    asked: list[tuple[Identity, PendingRun]] = []

    def finance_over_500(identity: Identity, run: PendingRun) -> bool:
        asked.append((identity, run))
        return run.state["amount"] <= 500 or "finance" in identity.groups

    run = policy_run(store, approvers=finance_over_500)
    with pytest.raises(NotAuthorized, match="finance_over_500 refused mallory"):
        run.workflow.checkpointer.decide(
            run.run_id, "approved", "m", identity=MALLORY, checks=run.workflow.policy_checks
        )
    assert store.get_run(run.run_id).status == Status.PENDING
    decided = store.decide(
        run.run_id, "approved", "b", identity=BOB, checks=run.workflow.policy_checks
    )
    assert decided.accepted
    identity, pending = asked[-1]
    assert (identity, pending.node, pending.state["amount"]) == (BOB, "pay", 700)
    assert (pending.started_by, pending.decision, pending.by) == (ADA, "approved", "b")


def test_a_callable_policy_this_process_has_not_loaded_refuses_to_decide(
    store: Checkpointer,
) -> None:
    run = policy_run(store, approvers=lambda identity, run: True)
    with pytest.raises(PolicyUnavailable, match="process that loaded the workflow") as refused:
        store.decide(run.run_id, "approved", "bob", identity=BOB)  # no checks: like the CLI
    assert isinstance(refused.value, NotAuthorized)
    assert refused.value.policy.endswith("<lambda>")
    assert store.get_run(run.run_id).status == Status.PENDING
    assert store.decisions(run.run_id)[-1].reason.startswith("policy unavailable: policy ")
    assert run.approve(by="bob").accepted  # the workflow's process has the code


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        (lambda identity, run: 1 / 0, "raised ZeroDivisionError"),
        (lambda identity, run: "yes", "returned 'yes', not True or False"),
        (lambda identity, run: None, "returned None, not True or False"),
    ],
)
def test_a_callable_policy_that_raises_or_answers_no_bool_refuses(
    store: Checkpointer, policy: object, reason: str
) -> None:
    run = policy_run(store, approvers=policy)
    with pytest.raises(NotAuthorized, match=reason):
        run.approve(by="bob")
    assert store.get_run(run.run_id).status == Status.PENDING
    assert reason in (store.decisions(run.run_id)[-1].reason or "")


def test_the_run_api_checks_the_workflows_identity_not_the_name_given(
    store: Checkpointer,
) -> None:
    who = {"now": ADA}
    graph = StateGraph("pay").add_node("pay", lambda s: None).set_entry_point("pay")
    graph.add_interrupt_before("pay", approvers={"bob"})
    run = graph.compile(store, identity=lambda: who["now"]).start({})
    run.run()
    assert run.policy.started_by == ADA
    assert run.policy.interrupts["before:pay"].approvers == {"bob"}
    with pytest.raises(NotAuthorized):
        run.approve(by="bob")
    who["now"] = BOB
    assert run.approve(by="Robert").identity == BOB
    assert run.run().status == Status.COMPLETED


def test_a_refused_attempt_on_a_decided_run_says_not_pending_first(store: Checkpointer) -> None:
    run = policy_run(store, approvers={"bob"})
    store.decide(run.run_id, "approved", "bob", identity=BOB)
    with pytest.raises(ApprovalNotPending):
        store.decide(run.run_id, "approved", "ada", identity=ADA)
    assert [d.accepted for d in store.decisions(run.run_id)] == [True, False]


def test_a_run_without_a_policy_is_decided_by_anyone_and_reports_an_empty_policy(
    store: Checkpointer,
) -> None:
    run = pending_run(store)
    assert store.run_policy(run.run_id).interrupts == {}
    assert store.decide(run.run_id, "approved", "x", identity=MALLORY).accepted
    with pytest.raises(RunNotFound):
        store.run_policy("nope")


def held(store: Checkpointer) -> None:
    """Run r1 paused in superstep 0 with tasks b and d held for approval."""
    store.create_run(record(), CheckpointWrite(0, "a", '{"x": 0}'), started())
    fence = store.acquire("r1", "me").fence
    event = Event("r1", 2, 0, "interrupted", "b", {"when": "before", "task": "b"}, time.time())
    holds = [("b", "b", "digest-b"), ("d", "d", "digest-d")]
    change = StepCommit(Status.PENDING, "b", 0, [event], None, None, "digest-b", True, None, holds)
    store.commit("r1", fence, change, lease_seconds=30)


def test_an_edit_approving_a_held_task_is_kept_on_its_row_and_in_the_audit(
    store: Checkpointer,
) -> None:
    from agentnb.store.base import DecisionEdit

    held(store)
    edit = DecisionEdit(update={"x": 5}, approved_digest="digest-b2", replaces=("x",))
    decision = store.decide("r1", "approved", "ada", task="b", edit=edit)
    assert decision.edit == {"update": {"x": 5}, "approved_digest": "digest-b2"}
    rows = {t.task_id: t for t in store.pending_tasks("r1")}
    assert (rows["b"].status, rows["b"].update, rows["b"].replaces) == (
        "approved",
        {"x": 5},
        ("x",),
    )
    assert (rows["d"].status, rows["d"].update, rows["d"].replaces) == ("pending", None, ())
    assert store.decisions("r1")[0].edit == decision.edit
    assert store.checkpoint("r1").state == {"x": 0}  # the checkpoint is what was shown
    assert store.get_run("r1").status == Status.PENDING  # d still waits


def test_an_edit_replacing_a_key_another_held_tasks_edit_replaces_is_refused_and_audited(
    store: Checkpointer,
) -> None:
    from agentnb import ConflictingEdit
    from agentnb.store.base import DecisionEdit

    held(store)
    store.decide(
        "r1", "approved", "ada", task="b", edit=DecisionEdit(update={"x": 5}, replaces=("x",))
    )
    clash = DecisionEdit(update={"x": 6, "y": 1}, replaces=("x", "y"))
    with pytest.raises(ConflictingEdit) as caught:
        store.decide("r1", "approved", "bob", task="d", edit=clash)
    assert (caught.value.task, caught.value.key) == ("d", "x")
    rows = {t.task_id: t for t in store.pending_tasks("r1")}
    assert rows["d"].status == "pending"
    assert [(d.accepted, d.reason) for d in store.decisions("r1")] == [
        (True, None),
        (False, "conflicting edit: 'x'"),
    ]
    store.decide(
        "r1", "approved", "bob", task="d", edit=DecisionEdit(update={"y": 1}, replaces=("y",))
    )
    assert store.get_run("r1").status == Status.APPROVED
