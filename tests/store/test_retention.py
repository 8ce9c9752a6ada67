"""Retention and lazy history, part of the checkpointer contract: every backend (``store``)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest

from agentnb import (
    END,
    Checkpointer,
    InvalidRetention,
    RunActive,
    RunNotFound,
    StateGraph,
    Status,
    Workflow,
)
from agentnb.examples import build_refund_workflow
from agentnb.graph.run import Run
from agentnb.store.base import StepCommit, new_owner
from agentnb.store.records import Event, EventType
from agentnb.store.retention import parse_duration

FUTURE = time.time() + 10 * 86400  # "ended before" a cutoff that every run here meets


def loop(store: Checkpointer, steps: int = 3) -> Workflow:
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": [f"m{s['count']}"]})
    g.set_entry_point("agent")
    g.add_conditional_edge(
        "agent", lambda s: "agent" if s["count"] < steps else END, ["agent", END]
    )
    return g.compile(store, max_steps=steps + 1)


def completed(store: Checkpointer, run_id: str) -> Run:
    run = loop(store).start({"count": 0, "messages": []}, run_id=run_id)
    run.run()
    assert run.status == Status.COMPLETED
    return run


def decided(store: Checkpointer, run_id: str, decision: str) -> Run:
    run = build_refund_workflow(store, []).start({"requested": 1000}, run_id=run_id)
    run.run()
    store.decide(run_id, decision, "ada", comment="checked")
    return run


def gone(store: Checkpointer, run_id: str) -> bool:
    with pytest.raises(RunNotFound):
        store.get_run(run_id)
    with pytest.raises(RunNotFound):
        store.events(run_id)
    with pytest.raises(RunNotFound):
        store.checkpoints(run_id)
    return True


def test_prune_deletes_finished_runs_and_keeps_the_decision_audit(store: Checkpointer) -> None:
    completed(store, "done")
    rejected = decided(store, "no", "rejected")
    audit = store.decisions("no")
    pruned = store.prune(before=FUTURE)
    assert sorted(pruned.runs) == ["done", "no"]
    assert pruned.audit_rows == 0
    assert gone(store, "done")
    assert gone(store, "no")
    assert store.decisions("no") == audit  # the audit outlives the run
    assert rejected.run_id not in {r.run_id for r in store.list_runs()}


def test_prune_with_include_audit_deletes_the_decision_audit_too(store: Checkpointer) -> None:
    decided(store, "no", "rejected")
    with pytest.raises(Exception, match="not pending"):
        store.decide("no", "approved", "bob")  # a refused attempt: audited as well
    assert len(store.decisions("no")) == 2
    pruned = store.prune(before=FUTURE, include_audit=True)
    assert (pruned.runs, pruned.audit_rows) == (("no",), 2)
    assert store.decisions("no") == []


def test_running_runs_are_never_pruned_idle_or_driven(store: Checkpointer) -> None:
    idle = loop(store).start({"count": 0, "messages": []}, run_id="idle")
    idle.step()
    driven = loop(store).start({"count": 0, "messages": []}, run_id="driven")
    store.acquire("driven", new_owner())
    for status in (None, "completed", "failed", "cancelled"):
        assert store.prune(before=FUTURE, status=status).runs == ()
    assert store.get_run("idle").status == store.get_run("driven").status == Status.RUNNING
    assert driven.run_id == "driven"


def test_pending_approvals_are_never_pruned_even_with_the_audit(store: Checkpointer) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000}, run_id="waiting")
    run.run()
    assert store.prune(before=FUTURE, include_audit=True).runs == ()
    assert store.get_run("waiting").status == Status.PENDING
    run.approve(by="ada")  # still decidable, exactly as before
    assert store.get_run("waiting").status == Status.APPROVED


def test_prune_takes_only_runs_that_ended_before_the_cutoff(store: Checkpointer) -> None:
    old = completed(store, "old").record
    while time.time() <= old.updated_at:  # the clock must move past the first run's end
        pass
    cut = time.time()
    completed(store, "new")
    assert store.prune(before=cut).runs == ("old",)
    assert store.get_run("new").status == Status.COMPLETED
    assert store.prune(before=dt.datetime.fromtimestamp(cut, dt.UTC)).runs == ()


def test_prune_with_a_status_takes_only_that_status(store: Checkpointer) -> None:
    completed(store, "done")
    decided(store, "no", "rejected")
    assert store.prune(before=FUTURE, status=Status.REJECTED).runs == ("no",)
    assert store.get_run("done").status == Status.COMPLETED


def test_cancelled_runs_are_pruned_only_when_named(store: Checkpointer) -> None:
    loop(store).start({"count": 0, "messages": []}, run_id="stopped")
    fence = store.acquire("stopped", new_owner()).fence
    stop = Event("stopped", 2, 0, EventType.CANCELLED, "agent", {}, time.time())
    change = StepCommit(Status.CANCELLED, "agent", 0, [stop], release=True)
    store.commit("stopped", fence, change, lease_seconds=30)
    assert store.get_run("stopped").status == Status.CANCELLED
    assert store.prune(before=FUTURE).runs == ()
    assert store.prune(before=FUTURE, status="cancelled").runs == ("stopped",)


@pytest.mark.parametrize("status", ["running", "pending", "approved", "done", ""])
def test_prune_refuses_a_status_that_is_not_an_end_and_deletes_nothing(
    store: Checkpointer, status: str
) -> None:
    completed(store, "done")
    with pytest.raises(InvalidRetention, match="never pruned") as caught:
        store.prune(before=FUTURE, status=status)
    assert (caught.value.argument, caught.value.value) == ("status", status)
    assert store.get_run("done").status == Status.COMPLETED


@pytest.mark.parametrize("before", ["yesterday", None, True])
def test_prune_refuses_a_cutoff_that_is_not_a_time(store: Checkpointer, before: Any) -> None:
    with pytest.raises(InvalidRetention, match="epoch seconds"):
        store.prune(before=before)


def test_delete_run_refuses_pending_approved_and_driven_runs(store: Checkpointer) -> None:
    build_refund_workflow(store, []).start({"requested": 1000}, run_id="waiting").run()
    build_refund_workflow(store, []).start({"requested": 1000}, run_id="yes").run()
    store.decide("yes", "approved", "ada")
    loop(store).start({"count": 0, "messages": []}, run_id="driven")
    owner = new_owner()
    store.acquire("driven", owner)
    for run_id, fix in (("waiting", "Reject it first"), ("yes", "Continue or cancel")):
        with pytest.raises(RunActive, match=fix) as caught:
            store.delete_run(run_id, include_audit=True)
        assert caught.value.run_id == run_id
    with pytest.raises(RunActive, match="holds its lease") as caught:
        store.delete_run("driven")
    assert caught.value.worker == owner
    assert {r.run_id for r in store.list_runs()} == {"waiting", "yes", "driven"}
    assert len(store.decisions("yes")) == 1


def test_delete_run_removes_an_idle_or_finished_run_and_unknown_ids_are_not_found(
    store: Checkpointer,
) -> None:
    loop(store).start({"count": 0, "messages": []}, run_id="idle").step()
    completed(store, "done")
    assert store.delete_run("idle").runs == ("idle",)
    assert store.delete_run("done").runs == ("done",)
    assert gone(store, "idle")
    assert gone(store, "done")
    with pytest.raises(RunNotFound):
        store.delete_run("done")


def test_a_deleted_runs_effect_ledger_goes_and_its_id_starts_afresh(store: Checkpointer) -> None:
    workflow = build_refund_workflow(store, [])

    def pay() -> list[str]:
        run = workflow.start({"requested": 700}, run_id="paid")
        run.run()
        run.approve(by="ada")
        run.run()
        return [e.type for e in run.events if e.type.startswith("effect")]

    assert pay() == [EventType.EFFECT]
    assert store.effects("paid")
    store.delete_run("paid")
    assert store.effects("paid") == []
    assert pay() == [EventType.EFFECT]  # done again, not answered from the old run's ledger


def test_prune_leaves_state_machine_instances_alone(store: Checkpointer) -> None:
    from agentnb.examples.refund_machine import build_refund_machine

    instance = build_refund_machine().start(store=store, instance_id="m1")
    completed(store, "done")
    assert store.prune(before=FUTURE, include_audit=True).runs == ("done",)
    assert store.machines.load("m1").state == instance.state


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30d", 30 * 86400.0), ("12h", 43200.0), ("1w2d", 9 * 86400.0), ("90m", 5400.0)],
)
def test_durations_read_as_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "d", "30 days", "-1d", "1d-", "1y"])
def test_a_duration_without_a_unit_is_refused(text: str) -> None:
    with pytest.raises(InvalidRetention, match="a number and a unit"):
        parse_duration(text)


# -- lazy history ----------------------------------------------------------------------------


def test_history_lists_every_checkpoint_and_loads_each_state_on_access(
    store: Checkpointer,
) -> None:
    run = completed(store, "done")
    history = run.history()
    full = store.checkpoints("done")
    assert len(history) == len(full) == 4
    assert history.steps == [0, 1, 2, 3]
    assert [(c.step, c.node, c.at) for c in history] == [(c.step, c.node, c.at) for c in full]
    assert [c.state for c in history] == [c.state for c in full]
    assert history[-1].state == {"count": 3, "messages": ["m0", "m1", "m2"]}
    assert history.at_step(2).load() == full[2]


def test_a_state_from_history_is_a_copy_the_caller_cannot_corrupt(store: Checkpointer) -> None:
    run = completed(store, "done")
    state = run.history()[1].state
    state["messages"].append("mallory")
    assert run.history()[1].state == {"count": 1, "messages": ["m0"]}


def test_listing_history_decodes_no_state(
    store: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = completed(store, "done")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("listing the history decoded a state")

    monkeypatch.setattr(type(store), "checkpoints", refuse)
    monkeypatch.setattr(type(store), "checkpoint", refuse)
    history = run.history()
    assert [(c.step, c.node) for c in history][-1] == (3, END)


def test_a_fork_from_a_history_entry_starts_from_its_state(store: Checkpointer) -> None:
    run = completed(store, "done")
    entry = run.history()[1]
    fork = run.fork(entry.step, run_id="fork")
    assert fork.state == entry.state == {"count": 1, "messages": ["m0"]}
    fork.run()
    assert fork.state["messages"] == ["m0", "m1", "m2"]
    assert run.history().steps == [0, 1, 2, 3]  # the original is untouched
