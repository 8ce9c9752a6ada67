"""One spelling per concept: the approver's name is ``by=`` everywhere; the old spellings
(``approver=``, ``RunRecord.worker``) still work, and warn with the fact and the fix."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from agentnb import (
    Checkpointer,
    InvalidDecision,
    MemoryCheckpointer,
    RunRecord,
    StateGraph,
    Status,
    Workflow,
)


def paused(store: Checkpointer) -> tuple[Workflow, str]:
    g = StateGraph("refund").add_node("plan", lambda s: None).add_node("pay", lambda s: None)
    g.set_entry_point("plan").add_edge("plan", "pay").add_interrupt_before("pay")
    workflow = g.compile(store)
    run = workflow.start({})
    run.run()
    return workflow, run.run_id


def test_resume_takes_the_approvers_name_as_by() -> None:
    workflow, run_id = paused(MemoryCheckpointer())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        events = list(workflow.resume(run_id, "approved", by="ada"))
    assert events[0].payload["by"] == "ada"


def test_resume_with_approver_warns_that_it_is_by_now_and_still_decides() -> None:
    workflow, run_id = paused(MemoryCheckpointer())
    with pytest.warns(DeprecationWarning, match=r"approver=.*deprecated.*by='ada'") as caught:
        list(workflow.resume(run_id, "approved", approver="ada"))
    assert caught[0].filename == __file__  # it points at the caller's line
    assert workflow.checkpointer.decisions(run_id)[-1].approver == "ada"
    assert workflow.checkpointer.get_run(run_id).status == Status.COMPLETED


def test_aresume_with_approver_warns_too() -> None:
    workflow, run_id = paused(MemoryCheckpointer())
    with pytest.warns(DeprecationWarning, match="aresume"):
        stream = workflow.aresume(run_id, "rejected", approver="bob")

    async def types() -> list[str]:
        return [e.type async for e in stream]

    assert asyncio.run(types())[0] == "rejected"


def test_a_store_decision_with_approver_warns_and_is_recorded(store: Checkpointer) -> None:
    _, run_id = paused(store)
    with pytest.warns(DeprecationWarning, match=r"decide\(approver=\.\.\.\) is deprecated"):
        store.decide(run_id, "approved", approver="ada")
    assert store.decisions(run_id)[-1].approver == "ada"
    assert store.get_run(run_id).status == Status.APPROVED


def test_two_different_names_are_refused_before_anything_is_stored(store: Checkpointer) -> None:
    _, run_id = paused(store)
    with (
        pytest.warns(DeprecationWarning, match="approver="),
        pytest.raises(InvalidDecision, match="by='ada' and approver='bob'"),
    ):
        store.decide(run_id, "approved", "ada", approver="bob")
    assert store.decisions(run_id) == []
    assert store.get_run(run_id).status == Status.PENDING


def test_run_record_worker_is_the_lease_owner_and_warns() -> None:
    run = RunRecord("r", "g", "s", Status.RUNNING, "n", 0, 1, 10, 0.0, 0.0, lease_owner="w1")
    with pytest.warns(DeprecationWarning, match="RunRecord.lease_owner instead"):
        assert run.worker == "w1"


def test_the_panels_prefilled_name_is_by_and_approver_warns() -> None:
    from agentnb.widgets import view

    workflow, run_id = paused(MemoryCheckpointer())
    panel = view(workflow.attach(run_id), by="ada")
    panel.close()
    assert panel.approver == "ada"
    with pytest.warns(DeprecationWarning, match=r"view\(approver=\.\.\.\) is deprecated"):
        old = view(workflow.attach(run_id), approver="bob")
    old.close()
    assert old.approver == "bob"
