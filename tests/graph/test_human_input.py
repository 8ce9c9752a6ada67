"""Human input beyond yes/no: approve with edits, and questions a node asks (ctx.interrupt)."""

from __future__ import annotations

import asyncio
import operator
from collections import Counter
from typing import Any

import pytest

from agentnb import (
    ApprovalNotPending,
    Checkpointer,
    EventType,
    InvalidAnswer,
    InvalidDecision,
    NodeContext,
    NodeFailed,
    StaleApproval,
    StateGraph,
    Status,
)
from agentnb.graph.questions import answer_problems
from tests.conftest import Driver

AMOUNT = {
    "question": "How much should we refund?",
    "schema": {"type": "integer", "minimum": 1, "maximum": 500},
}


def refund(store: Checkpointer) -> Any:
    g = StateGraph("refund")
    g.add_node("plan", lambda s: {"amount": 900, "messages": ["planned"]})
    g.add_node("pay", lambda s: {"paid": s["amount"], "messages": ["paid"]})
    g.set_entry_point("plan").add_edge("plan", "pay").add_interrupt_before("pay")
    return g.compile(store)


def test_approve_with_edits_runs_the_node_on_the_edited_state_and_audits_it(
    drive: Driver, store: Checkpointer
) -> None:
    run = refund(store).start({"messages": []})
    drive.run(run)
    shown = run.pending_digest
    decision = run.approve(by="ada", update={"amount": 300, "messages": ["capped by ada"]})
    assert decision.edit is not None
    assert decision.edit["update"] == {"amount": 300, "messages": ["capped by ada"]}
    assert decision.digest_shown == shown
    assert decision.edit["approved_digest"] not in (None, shown)
    assert run.state["amount"] == 300  # the edit is the pending step's checkpoint
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state["paid"] == 300
    assert run.state["messages"] == ["planned", "capped by ada", "paid"]  # through reducers
    audit = run.decisions()
    assert [d.edit for d in audit] == [decision.edit]
    approved = next(e for e in run.events if e.type == EventType.APPROVED)
    assert approved.payload["update"] == {"amount": 300, "messages": ["capped by ada"]}


def test_an_edit_that_is_not_json_or_bound_to_a_stale_state_decides_nothing(
    store: Checkpointer,
) -> None:
    run = refund(store).start({"messages": []})
    run.run()
    with pytest.raises(InvalidDecision, match="update"):
        run.approve(by="ada", update={"amount": {1, 2}})
    with pytest.raises(StaleApproval):
        run.approve(by="ada", update={"amount": 1}, expected_digest="0" * 64)
    assert run.status == Status.PENDING
    assert run.state["amount"] == 900
    assert [d.accepted for d in run.decisions()] == [False]  # the stale attempt, audited


def asking(store: Checkpointer, calls: Counter[str], questions: int = 1) -> Any:
    def pay(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        calls["pay"] += 1
        ctx.once("quote", lambda: calls.update(["quote"]))
        answers = [ctx.interrupt({**AMOUNT, "question": f"amount {i}?"}) for i in range(questions)]
        return {"answers": answers}

    g = StateGraph("ask")
    g.add_node("pay", pay)
    g.set_entry_point("pay")
    return g.compile(store)


def test_a_question_pauses_the_run_and_the_answer_resumes_it_exactly_once(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()
    run = asking(store, calls).start({})
    drive.run(run)
    assert (run.status, run.node) == (Status.PENDING, "pay")
    question = run.question
    assert question is not None
    assert question["question"] == "amount 0?"
    assert question["schema"] == AMOUNT["schema"]
    with pytest.raises(InvalidAnswer) as caught:
        run.respond(9000, by="ada")
    assert caught.value.problems == (("$.answer", "must be at most 500, not 9000"),)
    assert run.status == Status.PENDING
    if drive.mode == "sync":
        decision = run.respond(250, by="ada")
    else:  # the async twin is the same decision
        decision = asyncio.run(run.arespond(250, by="ada"))
    assert decision.edit == {"answer": 250}
    with pytest.raises(ApprovalNotPending):
        run.respond(260, by="bob")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state == {"answers": [250]}
    assert calls == {"pay": 2, "quote": 1}  # ran again from its start; the effect did not
    assert [d.accepted for d in run.decisions()] == [True, False]


def test_several_questions_in_one_node_are_answered_in_order(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()
    run = asking(store, calls, questions=3).start({})
    for answer in (10, 20, 30):
        drive.run(run)
        question = run.question
        assert question is not None
        assert question["question"] == f"amount {answer // 10 - 1}?"
        run.respond(answer, by="ada")
    drive.run(run)
    assert run.state == {"answers": [10, 20, 30]}
    assert calls == {"pay": 4, "quote": 1}


def test_a_question_in_one_branch_waits_while_the_others_finish(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()

    def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        calls["ask"] += 1
        return {"notes": [ctx.interrupt("Anything to add?")]}

    def fetch(state: dict[str, Any]) -> dict[str, Any]:
        calls["fetch"] += 1
        return {"notes": ["fetched"]}

    g = StateGraph("branch-question", reducers={"notes": operator.add})
    g.add_node("start", lambda s: None).add_node("ask", ask).add_node("fetch", fetch)
    g.set_entry_point("start").add_edge("start", "ask").add_edge("start", "fetch")
    run = g.compile(store).start({"notes": []})
    drive.run(run)
    assert run.status == Status.PENDING
    assert calls == {"ask": 1, "fetch": 1}
    assert [t.task_id for t in run.pending()] == ["ask"]
    run.respond("all good", by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state["notes"] == ["all good", "fetched"]
    assert calls == {"ask": 2, "fetch": 1}


def test_a_question_with_a_schema_keyword_it_cannot_check_fails_the_node(
    store: Checkpointer,
) -> None:
    def ask(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.interrupt({"question": "email?", "schema": {"type": "string", "format": "email"}})

    g = StateGraph("bad-question").add_node("ask", ask).set_entry_point("ask")
    with pytest.raises(NodeFailed, match="format, which a question cannot check"):
        g.compile(store).invoke({})


def test_answers_are_checked_against_the_documented_schema_subset() -> None:
    form = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "plan": {"enum": ["free", "pro"]},
            "seats": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "agree": {"type": "boolean"},
        },
        "required": ["name", "plan"],
        "additionalProperties": False,
    }
    ok = {"name": "Ada", "plan": "pro", "seats": 3, "tags": ["a"], "agree": True}
    assert answer_problems(ok, form) == []
    bad = {"name": "", "plan": "gold", "seats": 1.5, "tags": ["a", 2, "c"], "extra": 1}
    assert answer_problems(bad, form) == [
        ("$.answer.extra", "is not a field of this form"),
        ("$.answer.name", "must have at least 1 characters"),
        ("$.answer.plan", "must be one of 'free', 'pro', not 'gold'"),
        ("$.answer.seats", "must be integer, not 1.5"),
        ("$.answer.tags", "must have at most 2 items"),
        ("$.answer.tags[1]", "must be string, not 2"),
    ]
    assert answer_problems({"plan": "free"}, form) == [
        ("$.answer", "is missing the required key 'name'")
    ]


def test_a_side_effect_that_returns_none_is_still_done_once(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()
    run = asking(store, calls).start({})
    drive.run(run)  # quote() returned None; the node then asked its question
    run.respond(5, by="ada")
    drive.run(run)
    assert calls["quote"] == 1
    replayed = [e for e in run.events if e.type == EventType.EFFECT_REPLAYED]
    assert [e.payload["name"] for e in replayed] == ["quote"]
