"""Interrupts inside parallel branches: a held task waits while the others finish, and
several pending approvals are each decided exactly once."""

from __future__ import annotations

import json
import operator
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentnb import (
    ApprovalNotPending,
    Checkpointer,
    EventType,
    SqliteCheckpointer,
    StaleApproval,
    StateGraph,
    Status,
    TaskNotNamed,
)
from tests.conftest import Driver
from tests.processes import python


def fan(store: Checkpointer | None, *held: str, calls: Counter[str] | None = None) -> Any:
    """plan -> (b, c, d) -> report, with interrupts before ``held``."""
    seen = calls if calls is not None else Counter()

    def branch(name: str) -> Any:
        def node(state: dict[str, Any]) -> dict[str, Any]:
            seen[name] += 1
            return {"done": [name]}

        return node

    g = StateGraph("branches", reducers={"done": operator.add})
    g.add_node("plan", lambda s: None)
    for name in ("b", "c", "d"):
        g.add_node(name, branch(name))
    g.add_node("report", lambda s: {"count": len(s["done"])})
    g.set_entry_point("plan")
    for name in ("b", "c", "d"):
        g.add_edge("plan", name)
    g.add_edge(["b", "c", "d"], "report")
    g.add_interrupt_before(*held)
    return g.compile(store)


def test_an_interrupt_in_one_branch_holds_that_task_while_the_others_finish(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()
    run = fan(store, "c", calls=calls).start({"done": []})
    drive.run(run)
    assert (run.status, run.node) == (Status.PENDING, "c")
    assert calls == {"b": 1, "d": 1}  # ran while c waits
    assert [(t.task_id, t.status) for t in run.pending()] == [("c", "pending")]
    types = [e.type for e in run.events]
    assert types.count(EventType.INTERRUPTED) == 1
    assert [e.node for e in run.events if e.type == EventType.NODE_START] == ["plan", "b", "d"]
    run.approve(by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert calls == {"b": 1, "c": 1, "d": 1}  # b and d did not run again
    assert run.state == {"done": ["b", "c", "d"], "count": 3}
    starts = [e.node for e in run.events if e.type == EventType.NODE_START]
    assert starts == ["plan", "b", "d", "c", "report"]  # no event twice


def test_several_pending_approvals_are_each_decided_once(
    drive: Driver, store: Checkpointer
) -> None:
    run = fan(store, "b", "d").start({"done": []})
    drive.run(run)
    assert [t.task_id for t in run.pending()] == ["b", "d"]
    with pytest.raises(TaskNotNamed) as caught:
        run.approve(by="ada")
    assert caught.value.tasks == ("b", "d")
    run.approve(by="ada", task="d")
    assert run.status == Status.PENDING  # b still waits
    with pytest.raises(ApprovalNotPending):
        run.approve(by="bob", task="d")
    drive.run(run)  # nothing to do until b is decided
    assert run.status == Status.PENDING
    run.approve(by="bob")  # the only one left: no need to name it
    assert run.status == Status.APPROVED
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state["done"] == ["b", "c", "d"]
    audit = [(d.node, d.approver, d.accepted) for d in run.decisions()]
    assert audit == [
        (None, "ada", False),
        ("d", "ada", True),
        ("d", "bob", False),
        ("b", "bob", True),
    ]
    approvals = [e.payload["task"] for e in run.events if e.type == EventType.APPROVED]
    assert approvals == ["d", "b"]


def test_rejecting_one_held_task_rejects_the_run(drive: Driver, store: Checkpointer) -> None:
    calls: Counter[str] = Counter()
    run = fan(store, "b", "d", calls=calls).start({"done": []})
    drive.run(run)
    run.reject(by="ada", task="b", comment="too risky")
    assert run.status == Status.REJECTED
    with pytest.raises(ApprovalNotPending):
        run.approve(by="ada", task="d")
    drive.run(run)
    assert calls == {"c": 1}


def test_a_held_task_approved_against_a_stale_digest_is_refused(store: Checkpointer) -> None:
    run = fan(store, "b", "d").start({"done": []})
    run.run()
    digests = {t.task_id: t.digest for t in run.pending()}
    with pytest.raises(StaleApproval):
        run.approve(by="ada", task="b", expected_digest=digests["d"])
    run.approve(by="ada", task="b", expected_digest=digests["b"])
    assert [t.task_id for t in run.pending()] == ["d"]


@pytest.mark.slow
def test_processes_racing_to_approve_held_tasks_decide_each_exactly_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "race.sqlite3"
    with SqliteCheckpointer(path) as store:
        wf = fan(store, "b", "c", "d")
        runs = [wf.start({"done": []}) for _ in range(5)]
        for run in runs:
            run.run()
        pairs = [[r.run_id, t.task_id] for r in runs for t in r.pending()]
    assert len(pairs) == 15
    (tmp_path / "ids.json").write_text(json.dumps(pairs))
    go = tmp_path / "go"
    worker = Path(__file__).with_name("approval_worker.py")
    procs = [
        python(worker, str(path), str(go), str(i), str(tmp_path / "ids.json")) for i in range(6)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.touch()
    won = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        won += [tuple(p) for p in json.loads(out)]
    assert sorted(won) == sorted(tuple(p) for p in pairs)  # each pair won exactly once
    with SqliteCheckpointer(path) as store:
        for run_id in {r for r, _ in pairs}:
            assert store.get_run(run_id).status == Status.APPROVED
            events = store.events(run_id)
            assert sorted(e.payload["task"] for e in events if e.type == "approved") == [
                "b",
                "c",
                "d",
            ]
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert sum(d.accepted for d in store.decisions()) == 15
        assert len(store.decisions()) == 6 * 15
        wf = fan(store, "b", "c", "d")
        final = wf.attach(runs[0].run_id).run()
        assert final.status == Status.COMPLETED
        assert final.state["count"] == 3


def test_a_held_task_is_decided_under_its_interrupts_approver_policy(store: Checkpointer) -> None:
    from agentnb import Identity, NotAuthorized

    def graph(who: str) -> Any:
        g = StateGraph("guarded", reducers={"done": operator.add})
        g.add_node("plan", lambda s: None)
        for name in ("b", "c"):
            g.add_node(name, lambda s, name=name: {"done": [name]})
            g.add_edge("plan", name)
        g.set_entry_point("plan")
        g.add_interrupt_before("b", approvers={"finance"})
        g.add_interrupt_before("c")
        return g.compile(store, identity=lambda: Identity(who))

    run = graph("mallory").start({"done": []})
    run.run()
    assert [t.task_id for t in run.pending()] == ["b", "c"]
    with pytest.raises(NotAuthorized):
        run.approve(by="mallory", task="b")
    run.approve(by="mallory", task="c")  # c's interrupt has no policy
    finance = graph("finance").attach(run.run_id)
    finance.approve(by="finance", task="b")
    finance.run()
    assert finance.status == Status.COMPLETED
    audit = [(d.node, d.identity.name if d.identity else None, d.accepted) for d in run.decisions()]
    assert audit == [("b", "mallory", False), ("c", "mallory", True), ("b", "finance", True)]


def test_a_held_task_its_policy_refuses_is_refused_as_not_authorized_whatever_digest_was_seen(
    store: Checkpointer,
) -> None:
    """The rules are checked in one order on every backend: pending, policy, digest."""
    from agentnb import Identity, NotAuthorized

    g = StateGraph("guarded", reducers={"done": operator.add})
    g.add_node("plan", lambda s: None)
    for name in ("b", "c"):
        g.add_node(name, lambda s, name=name: {"done": [name]})
        g.add_edge("plan", name)
    g.set_entry_point("plan")
    g.add_interrupt_before("b", approvers={"finance"})
    g.add_interrupt_before("c")
    run = g.compile(store, identity=lambda: Identity("mallory")).start({"done": []})
    run.run()
    with pytest.raises(NotAuthorized):
        run.approve(by="mallory", task="b", expected_digest="0" * 64)
    assert store.decisions(run.run_id)[-1].reason == (
        "not authorized: mallory is not among the approvers of before:b (finance)"
    )


def test_rejecting_a_held_task_keeps_no_edit_and_records_no_answer(store: Checkpointer) -> None:
    from agentnb.store.writes import DecisionEdit

    run = fan(store, "b", "d").start({"done": []})
    run.run()
    edit = DecisionEdit(update={"done": ["x"]}, answer_key="k", answer_json='"yes"')
    store.decide(run.run_id, "rejected", "ada", task="b", edit=edit)
    assert store.decisions(run.run_id)[-1].edit is None
    assert store.effects(run.run_id) == []
    rejected = [e for e in store.events(run.run_id) if e.type == EventType.REJECTED]
    assert "update" not in rejected[-1].payload
