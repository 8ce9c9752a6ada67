"""Correct and wrong solutions of every exercise, as real runs and instances in a store.

Each scenario takes a fresh SQLite checkpointer, does what a student would do, and returns
the keyword arguments for ``grade`` (``store=``, ``run=``, ``instance=``, ``answer=``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from enum import Enum
from typing import Any

import pytest

from agentnb import (
    END,
    BreakerOpen,
    CircuitBreaker,
    NodeFailed,
    Retry,
    RoutingError,
    SqliteCheckpointer,
    StateGraph,
    StepBudgetExhausted,
)
from agentnb.examples import build_refund_graph, build_refund_workflow
from agentnb.fsm import StateMachine

Scenario = Callable[[SqliteCheckpointer], dict[str, Any]]
FAST = {"initial": 0.001, "jitter": 0}


class Light(Enum):
    RED = "red"
    GREEN = "green"
    YELLOW = "yellow"
    MAINTENANCE = "maintenance"
    OFF = "off"


def light(*, maintenance: bool = False, final: bool = False) -> StateMachine:
    """The traffic light; ``maintenance``: emergency leads there from every colour."""
    m = StateMachine("light", states=Light, initial=Light.RED, final=[Light.OFF] if final else [])
    m.add_transition(Light.RED, "timer", Light.GREEN)
    m.add_transition(Light.GREEN, "timer", Light.YELLOW)
    m.add_transition(Light.YELLOW, "timer", Light.RED)
    emergency = Light.MAINTENANCE if maintenance else Light.RED
    m.add_transition(Light.GREEN, "emergency", emergency)
    m.add_transition(Light.YELLOW, "emergency", emergency)
    m.add_transition(Light.RED, "emergency", Light.MAINTENANCE)
    m.add_transition(Light.MAINTENANCE, "repair", Light.RED)
    m.add_transition(Light.RED, "shutdown", Light.OFF)
    if not final:
        m.add_transition(Light.OFF, "restart", Light.RED)
    return m


def _paused_refund(store: SqliteCheckpointer, amount: int, run_id: str) -> Any:
    run = build_refund_workflow(store).start({"requested": amount}, run_id=run_id)
    run.run()
    return run


# -- 01 --------------------------------------------------------------------------------


def reject_big(store: SqliteCheckpointer) -> dict[str, Any]:
    run = _paused_refund(store, 800, "big")
    run.reject(by="student")
    run.run()
    return {"store": store}


def approve_big(store: SqliteCheckpointer) -> dict[str, Any]:
    run = _paused_refund(store, 800, "big")
    run.approve(by="student")
    run.run()
    return {"store": store}


def with_notify(store: SqliteCheckpointer, *, replace: bool = False) -> dict[str, Any]:
    reducers = {"messages": lambda old, new: new} if replace else None
    g = StateGraph("refund", reducers=reducers)
    g.add_node("planner", lambda s: {"amount": 100, "messages": [{"role": "planner"}]})
    g.add_node("refund", lambda s: {"messages": [{"role": "tool"}]})
    g.add_node("notify", lambda s: {"messages": [{"role": "notify"}]})
    g.set_entry_point("planner").add_edge("planner", "refund").add_edge("refund", "notify")
    g.add_edge("notify", END)
    g.compile(store).start({}).run()
    return {"store": store}


def notify_before_refund(store: SqliteCheckpointer) -> dict[str, Any]:
    g = StateGraph("refund")
    g.add_node("planner", lambda s: {"amount": 100})
    g.add_node("notify", lambda s: {"messages": [{"role": "notify"}]})
    g.add_node("refund", lambda s: {"status": "paid"})
    g.set_entry_point("planner").add_edge("planner", "notify").add_edge("notify", "refund")
    g.compile(store).start({}).run()
    return {"store": store}


def huge_outcome(store: SqliteCheckpointer, *, declared: bool = False) -> dict[str, Any]:
    g = StateGraph("refund")
    g.add_node("planner", lambda s: {"amount": s["requested"]})
    g.add_node("refund", lambda s: {"status": "paid"})
    if declared:
        g.add_node("audit", lambda s: {"audited": True})
    g.set_entry_point("planner")
    outcomes = {"small": "refund", "huge": "audit"} if declared else {"small": "refund"}
    g.add_conditional_edge("planner", lambda s: "huge" if s["amount"] > 5000 else "small", outcomes)
    run = g.compile(store).start({"requested": 9000})
    with contextlib.suppress(RoutingError):
        run.run()
    return {"store": store}


# -- 02 --------------------------------------------------------------------------------


def approved_then_completed(store: SqliteCheckpointer) -> Any:
    run = _paused_refund(store, 1000, "refund-1000")
    run.approve(by="maria")
    run.run()
    return run


def predict_history(answer: Any) -> Scenario:
    def scenario(store: SqliteCheckpointer) -> dict[str, Any]:
        return {"run": approved_then_completed(store), "answer": answer}

    return scenario


def two_signoffs(
    store: SqliteCheckpointer, *, made_up: bool = False, decision: str = "rejected"
) -> dict[str, Any]:
    graph = build_refund_graph()
    graph.add_interrupt_before("refund")
    run = graph.compile(store).start({"requested": 1200}, run_id="two-signoffs")
    run.run()
    seen = run.pending_digest
    run.approve(by="tom")
    run.run()
    with contextlib.suppress(Exception):
        run.decide(decision, by="maria", expected_digest="0" * 64 if made_up else seen)
    return {"store": store}


def reject_2000(store: SqliteCheckpointer, *, comment: str | None = "duplicate") -> dict[str, Any]:
    run = _paused_refund(store, 2000, "refund-2000")
    run.reject(by="ops", comment=comment)
    return {"store": store}


# -- 03 --------------------------------------------------------------------------------


def maintenance(store: SqliteCheckpointer, *, everywhere: bool) -> dict[str, Any]:
    m = light(maintenance=everywhere)
    i = m.start("crossing", store=store, strict=False)
    i.send("emergency")
    i.send("repair")
    i.send("timer")
    i.send("emergency")
    i.send("repair")
    return {"store": store}


def final_state(store: SqliteCheckpointer, *, final: bool) -> dict[str, Any]:
    i = light(final=final).start("lamp", store=store, strict=False)
    i.send("shutdown")
    i.send("timer")
    return {"instance": i}


def clicks(events: list[str], answer: Any) -> Scenario:
    def scenario(store: SqliteCheckpointer) -> dict[str, Any]:
        i = light().start("panel", store=store)
        for event in events:
            i.send(event)
        return {"instance": i, "answer": answer}

    return scenario


def event_ids(store: SqliteCheckpointer, *, with_ids: bool, answer: int) -> dict[str, Any]:
    i = light().start("ids", store=store)
    for event_id in ("tick-1", "tick-1", "tick-2"):
        i.send("timer", event_id=event_id if with_ids else None)
    return {"store": store, "answer": answer}


# -- 04 --------------------------------------------------------------------------------


async def _slow(state: dict[str, Any]) -> None:
    await asyncio.sleep(30)


def retried_timeout(store: SqliteCheckpointer, *, answer: Any) -> dict[str, Any]:
    g = StateGraph("slow").add_node("call", _slow, timeout=0.01, retry=Retry(attempts=3, **FAST))
    run = g.set_entry_point("call").compile(store).start({})
    with pytest.raises(NodeFailed):
        run.run()
    return {"store": store, "answer": answer}


def breaker(store: SqliteCheckpointer, *, failures: int) -> dict[str, Any]:
    def charge(state: dict[str, Any]) -> None:
        raise ConnectionError("payment service unavailable")

    guard = CircuitBreaker("payments", failures=failures, reset_after=60)
    flow = StateGraph("charge").add_node("call", charge, breaker=guard).set_entry_point("call")
    workflow = flow.compile(store)
    for attempt in range(failures + 2):
        with contextlib.suppress(BreakerOpen, NodeFailed):
            workflow.start({}, run_id=f"charge-{attempt}").run()
    return {"store": store}


def replayed_payment(store: SqliteCheckpointer, run_ids: list[str]) -> dict[str, Any]:
    """A step that pays, then dies once before its checkpoint, and runs again."""
    failed: set[str] = set()

    def refund(state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        receipt = ctx.once("payment", lambda: {"paid": 300})
        if ctx.run_id not in failed:
            failed.add(ctx.run_id)
            raise ConnectionError("killed before the checkpoint")
        return {"receipt": receipt}

    g = StateGraph("worker").add_node("refund", refund, retry=Retry(attempts=2, **FAST))
    workflow = g.set_entry_point("refund").compile(store)
    for run_id in run_ids:
        workflow.start({"amount": 300}, run_id=run_id).run()
    return {"store": store}


# -- 05 --------------------------------------------------------------------------------


def refund_desk(store: SqliteCheckpointer, *, decide_all: bool, timeout_reply: bool = False) -> Any:
    def fraud_check(state: dict[str, Any]) -> dict[str, Any]:
        if state["customer"] == "bea":
            raise ConnectionError("fraud API timed out")
        return {"risk": "low"}

    async def draft_reply(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(1 if timeout_reply else 0)
        return {"reply": "x"}

    g = StateGraph("refund_desk")
    g.add_node("fraud_check", fraud_check, retry=Retry(attempts=2, **FAST))
    g.add_node("draft_reply", draft_reply, timeout=0.05 if timeout_reply else None)
    g.add_node("refund", lambda s: {"paid": True})
    g.set_entry_point("fraud_check").add_edge("fraud_check", "draft_reply")
    g.add_edge("draft_reply", "refund")
    g.add_interrupt_before("refund")
    workflow = g.compile(store)
    for i, customer in enumerate(["ada", "bea", "cy"]):
        with contextlib.suppress(NodeFailed):
            workflow.start({"customer": customer}, run_id=f"desk-{i}").run()
    if decide_all:
        for record in workflow.runs("pending"):
            workflow.attach(record.run_id).approve(by="clerk", comment="checked")
            workflow.attach(record.run_id).run()
    return workflow


def failed_report(answer: Any) -> Scenario:
    def scenario(store: SqliteCheckpointer) -> dict[str, Any]:
        refund_desk(store, decide_all=False)
        return {"store": store, "answer": answer}

    return scenario


def timed_out_reply(store: SqliteCheckpointer, *, timeout_reply: bool) -> dict[str, Any]:
    refund_desk(store, decide_all=False, timeout_reply=timeout_reply)
    return {"store": store}


def decided_refunds(store: SqliteCheckpointer, *, decide_all: bool) -> dict[str, Any]:
    refund_desk(store, decide_all=decide_all)
    return {"store": store}


# -- 09 --------------------------------------------------------------------------------


def agent(store: SqliteCheckpointer, *, stop_after: int, max_steps: int = 8) -> dict[str, Any]:
    def assistant(state: dict[str, Any]) -> dict[str, Any]:
        turn = len(state.get("messages", []))
        if turn >= stop_after:
            return {"messages": [{"role": "assistant", "content": "done"}]}
        return {"messages": [{"role": "assistant", "tool": "lookup"}]}

    g = StateGraph("agent")
    g.add_node("assistant", assistant)
    g.add_node("tools", lambda s: {"messages": [{"role": "tool", "content": "ok"}]})
    g.set_entry_point("assistant")
    g.add_conditional_edge(
        "assistant",
        lambda s: "tool" if s["messages"][-1].get("tool") else "answer",
        {"tool": "tools", "answer": END},
    )
    g.add_edge("tools", "assistant")
    run = g.compile(store, max_steps=max_steps).start({})
    with contextlib.suppress(StepBudgetExhausted):
        run.run()
    return {"store": store}


# -- capstone ----------------------------------------------------------------------------


def capstone(store: SqliteCheckpointer, *, with_rejection: bool) -> dict[str, Any]:
    def triage(state: dict[str, Any]) -> dict[str, Any]:
        return {"severity": state["severity"]}

    def reset(state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        return {"reset": ctx.once("reset", lambda: {"ticket": state["severity"]})}

    g = StateGraph("password_reset")
    g.add_node("triage", triage)
    g.add_node("reset", reset)
    g.add_node("answer", lambda s: {"answered": True})
    g.set_entry_point("triage")
    g.add_conditional_edge(
        "triage",
        lambda s: "risky" if s["severity"] > 1 else "simple",
        {"risky": "reset", "simple": "answer"},
    )
    g.add_interrupt_before("reset")
    workflow = g.compile(store)
    workflow.start({"severity": 0}).run()
    approved = workflow.start({"severity": 2})
    approved.run()
    approved.approve(by="admin")
    approved.run()
    if with_rejection:
        rejected = workflow.start({"severity": 3})
        rejected.run()
        rejected.reject(by="admin")
    return {"store": store}
