"""``start(..., run_id=..., replace=True)``: a cell that starts a fixed id can run again.

Every backend (``store``): the old run — checkpoints, events, effects, decision audit and
subgraph runs — is gone before the new one starts, except a run a worker holds, which is
refused with nothing deleted.
"""

from __future__ import annotations

import pytest

from agentnb import (
    Checkpointer,
    InvalidState,
    NodeContext,
    RunActive,
    StaleApproval,
    StateGraph,
    Status,
    StoreError,
    Workflow,
)
from agentnb.examples import build_refund_workflow
from agentnb.store.base import new_owner


def paying(store: Checkpointer) -> Workflow:
    def pay(state: dict, ctx: NodeContext) -> dict:
        return {"receipt": ctx.once("pay", lambda: f"paid {state['amount']}")}

    g = StateGraph("pay").add_node("pay", pay).set_entry_point("pay")
    return g.compile(store)


def test_without_replace_a_fixed_id_starts_once(store: Checkpointer) -> None:
    build_refund_workflow(store, []).start({"requested": 100}, run_id="r").run()
    with pytest.raises(StoreError, match="already exists"):
        build_refund_workflow(store, []).start({"requested": 200}, run_id="r")
    assert store.checkpoints("r")[0].state["requested"] == 100


def test_replace_starts_afresh_and_leaves_nothing_of_the_old_run(store: Checkpointer) -> None:
    workflow = build_refund_workflow(store, [])
    old = workflow.start({"requested": 1000}, run_id="r")
    old.run()
    assert old.status == Status.PENDING
    with pytest.raises(StaleApproval):  # a refused attempt: in the audit too
        store.decide("r", "approved", "ada", expected_digest="0" * 64)
    store.decide("r", "rejected", "ada", comment="too much")
    assert len(store.decisions("r")) == 2
    new = workflow.start({"requested": 300}, run_id="r", replace=True)
    assert (new.run_id, new.status, new.steps) == ("r", Status.RUNNING, 0)
    assert [e.type for e in store.events("r")] == ["run_started"]
    assert [c.state["requested"] for c in store.checkpoints("r")] == [300]
    assert store.decisions("r") == []
    assert [d for d in store.decisions() if d.run_id == "r"] == []
    new.run()
    assert new.status == Status.COMPLETED  # 300 needs no approval
    assert [r.run_id for r in store.list_runs()] == ["r"]


def test_a_pending_run_is_replaced_and_its_effects_do_not_answer_the_new_one(
    store: Checkpointer,
) -> None:
    paying(store).start({"amount": 5}, run_id="p").run()
    assert [e.result for e in store.effects("p")] == ["paid 5"]
    waiting = build_refund_workflow(store, []).start({"requested": 1000}, run_id="w")
    waiting.run()
    assert waiting.status == Status.PENDING
    replaced = build_refund_workflow(store, []).start({"requested": 900}, run_id="w", replace=True)
    assert replaced.status == Status.RUNNING
    again = paying(store).start({"amount": 7}, run_id="p", replace=True).run()
    assert again.state["receipt"] == "paid 7"  # not the old run's recorded "paid 5"
    assert [e.result for e in store.effects("p")] == ["paid 7"]


def test_a_run_a_worker_holds_is_refused_and_nothing_is_deleted(store: Checkpointer) -> None:
    workflow = build_refund_workflow(store, [])
    workflow.start({"requested": 100}, run_id="held")
    owner = new_owner()
    store.acquire("held", owner)
    events = store.events("held")
    with pytest.raises(RunActive, match="holds its lease") as caught:
        workflow.start({"requested": 200}, run_id="held", replace=True)
    assert caught.value.worker == owner
    assert store.events("held") == events
    assert store.checkpoints("held")[0].state["requested"] == 100


def test_bad_input_is_refused_before_the_old_run_is_touched(store: Checkpointer) -> None:
    workflow = build_refund_workflow(store, [])
    workflow.start({"requested": 100}, run_id="kept").run()
    with pytest.raises(InvalidState):
        workflow.start({"requested": {1, 2}}, run_id="kept", replace=True)
    assert store.get_run("kept").status == Status.COMPLETED


def test_replace_takes_the_subgraph_runs_with_it(store: Checkpointer) -> None:
    inner = StateGraph("check")
    inner.add_node("check", lambda s: {"checked": s["text"]})
    inner.add_node("sign", lambda s: {"signed": True})
    inner.set_entry_point("check").add_edge("check", "sign").add_interrupt_before("sign")
    outer = StateGraph("publish").add_node("review", inner).set_entry_point("review")
    workflow = outer.compile(store)
    first = workflow.start({"text": "old"}, run_id="story")
    first.run()
    [child] = first.children()
    assert child.state["checked"] == "old"
    second = workflow.start({"text": "new"}, run_id="story", replace=True)
    assert second.children() == []  # the old child is gone, not waiting to be continued
    second.run()
    [child] = second.children()
    assert (child.status, child.state["checked"]) == (Status.PENDING, "new")
    assert sorted(r.run_id for r in store.list_runs()) == ["story", child.run_id]


def test_replace_without_an_id_is_a_fresh_run(store: Checkpointer) -> None:
    workflow = build_refund_workflow(store, [])
    one = workflow.start({"requested": 1}, replace=True)
    two = workflow.start({"requested": 2}, replace=True)
    assert one.run_id != two.run_id
    assert len(store.list_runs()) == 2


def test_submit_replaces_a_queued_run(store: Checkpointer) -> None:
    workflow = build_refund_workflow(store, [])
    workflow.submit({"requested": 100}, run_id="q")
    queued = workflow.submit({"requested": 200}, run_id="q", replace=True)
    assert queued.status == Status.QUEUED
    assert [c.state["requested"] for c in store.checkpoints("q")] == [200]
