"""The refund workflow: plan a refund, pause for a human above a threshold, then pay.

Payments are simulated by appending to a list the caller passes in, so a demo can show
exactly how many refunds happened (one per approved run, never two).
"""

from __future__ import annotations

from typing import Any

from agentnb.graph.builder import END, StateGraph
from agentnb.graph.workflow import Workflow
from agentnb.store.base import Checkpointer

__all__ = ["APPROVAL_THRESHOLD", "build_refund_graph", "build_refund_workflow"]

APPROVAL_THRESHOLD = 500
"""Refunds above this amount need a human's approval."""


def build_refund_graph(refunds: list[Any]) -> StateGraph:
    """The refund graph; each executed ``refund`` node appends the amount to ``refunds``."""

    def planner(state: dict[str, Any]) -> dict[str, Any]:
        amount = state.get("requested", 1000)
        return {
            "action": "refund",
            "amount": amount,
            "messages": [{"role": "planner", "content": f"plan: refund {amount}"}],
        }

    def human_approval(state: dict[str, Any]) -> dict[str, Any]:
        return {"approval_recorded": True}

    def refund(state: dict[str, Any]) -> dict[str, Any]:
        refunds.append(state["amount"])  # the simulated payment
        return {
            "status": "success",
            "messages": [{"role": "tool", "content": f"refunded {state['amount']}"}],
        }

    def route(state: dict[str, Any]) -> str:
        return "needs_approval" if state["amount"] > APPROVAL_THRESHOLD else "small"

    graph = StateGraph("refund")
    graph.add_node("planner", planner, description="decide what to refund")
    graph.add_node("human_approval", human_approval, description="a person signs off")
    graph.add_node("refund", refund, description="call the (simulated) payment service")
    graph.set_entry_point("planner")
    graph.add_conditional_edge(
        "planner", route, {"needs_approval": "human_approval", "small": "refund"}
    )
    graph.add_edge("human_approval", "refund")
    graph.add_edge("refund", END)
    graph.add_interrupt_before("human_approval")
    return graph


def build_refund_workflow(
    checkpointer: Checkpointer | None = None, refunds: list[Any] | None = None
) -> Workflow:
    """The compiled refund workflow (in memory unless a checkpointer is given)."""
    return build_refund_graph([] if refunds is None else refunds).compile(checkpointer)
