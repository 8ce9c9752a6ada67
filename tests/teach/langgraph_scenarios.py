"""Correct and wrong solutions of notebook 10's exercises: LangGraph threads attached to
the store being graded. LangGraph is imported inside each one (the ``langgraph`` extra)."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest

from agentnb import SqliteCheckpointer


class Ticket(TypedDict, total=False):
    order: str
    amount: int
    log: list[str]


def _support(inner: str = "none", interrupt_before: tuple[str, ...] = ("refund",)) -> Any:
    """clarify (asks the order) -> agent (proposes 40) -> refund | END.

    ``inner``: ``"node"`` makes refund a subgraph (check -> pay) added as a node,
    ``"called"`` calls that graph inside refund's function instead."""
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def clarify(s: Ticket) -> dict[str, Any]:
        return {"order": interrupt({"question": "Which order?"})}

    pay = StateGraph(Ticket)
    pay.add_node("check", lambda s: {"log": ["checked"]})
    pay.add_node("pay", lambda s: {"log": ["checked", "paid"]})
    pay.add_edge(START, "check")
    pay.add_edge("check", "pay")
    pay.add_edge("pay", END)
    paying = pay.compile()
    g = StateGraph(Ticket)
    g.add_node("clarify", clarify)
    g.add_node("agent", lambda s: {"amount": 40})
    if inner == "node":
        g.add_node("refund", paying)
    elif inner == "called":
        g.add_node("refund", lambda s: paying.invoke(s))
    else:
        g.add_node("refund", lambda s: {"log": ["paid"]})
    g.add_edge(START, "clarify")
    g.add_edge("clarify", "agent")
    g.add_conditional_edges(
        "agent",
        lambda s: "refund" if s["amount"] > 0 else "done",
        {"refund": "refund", "done": END},
    )
    g.add_edge("refund", END)
    return g.compile(checkpointer=InMemorySaver(), interrupt_before=list(interrupt_before))


def _asked(store: SqliteCheckpointer, app: Any, thread: str = "t1") -> Any:
    from agentnb.interop.langgraph import attach

    run = attach(app, {"configurable": {"thread_id": thread}}, input={"log": []}, store=store)
    run.run()
    run.respond("A-17", by="student")
    return run


def answer_then(store: SqliteCheckpointer, *, decision: str) -> dict[str, Any]:
    run = _asked(store, _support())
    run.decide(decision, by="student", expected_digest=run.pending_digest)
    return {"store": store}


def fork(store: SqliteCheckpointer, *, amount: int | None) -> dict[str, Any]:
    run = _asked(store, _support())
    run.approve(by="student", expected_digest=run.pending_digest)
    branch = run.fork(2, update=None if amount is None else {"amount": amount})
    branch.run()
    if branch.status == "pending":
        branch.approve(by="student", expected_digest=branch.pending_digest)
    return {"store": store}


def subgraph(store: SqliteCheckpointer, *, inner: str) -> dict[str, Any]:
    run = _asked(store, _support(inner))
    run.approve(by="student", expected_digest=run.pending_digest)
    return {"store": store}
