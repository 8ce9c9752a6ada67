"""The refund workflow: plan a refund, pause for a human above a threshold, then pay.

Payments go to :class:`PaymentService`, a simulated provider that honours idempotency keys
the way real payment APIs do: a repeated request with the same key returns the first
receipt instead of paying twice. The refund node calls it through ``ctx.once``, so a step
re-executed after a crash returns the recorded receipt without calling the service again.
"""

from __future__ import annotations

from typing import Any

from agentnb.graph.builder import END, StateGraph
from agentnb.graph.run import NodeContext
from agentnb.graph.workflow import Workflow
from agentnb.store.base import Checkpointer

__all__ = ["APPROVAL_THRESHOLD", "PaymentService", "build_refund_graph", "build_refund_workflow"]

APPROVAL_THRESHOLD = 500
"""Refunds above this amount need a human's approval."""


class PaymentService:
    """A simulated payment provider; ``refunds`` lists every amount actually paid out.

    Example:
        >>> from agentnb.examples import PaymentService
        >>> payments = PaymentService()
        >>> payments.refund(40, idempotency_key="run-1:refund")
        {'refund_id': 're_1', 'amount': 40}
        >>> payments.refund(40, idempotency_key="run-1:refund")  # a retry pays nothing twice
        {'refund_id': 're_1', 'amount': 40}
        >>> payments.refunds
        [40]
    """

    def __init__(self, refunds: list[Any] | None = None) -> None:
        self.refunds: list[Any] = [] if refunds is None else refunds
        self._receipts: dict[str, dict[str, Any]] = {}

    def refund(self, amount: int, *, idempotency_key: str) -> dict[str, Any]:
        """Pay ``amount`` back once per ``idempotency_key``; return the receipt."""
        if idempotency_key not in self._receipts:
            self.refunds.append(amount)
            self._receipts[idempotency_key] = {
                "refund_id": f"re_{len(self.refunds)}",
                "amount": amount,
            }
        return self._receipts[idempotency_key]


def build_refund_graph(payments: PaymentService | list[Any] | None = None) -> StateGraph:
    """The refund graph; pass a :class:`PaymentService` (or the list it should pay into).

    Example:
        >>> from agentnb.examples import build_refund_graph
        >>> graph = build_refund_graph()
        >>> graph
        StateGraph('refund', nodes=['planner', 'human_approval', 'refund'])
    """
    service = payments if isinstance(payments, PaymentService) else PaymentService(payments)

    def planner(state: dict[str, Any]) -> dict[str, Any]:
        amount = state.get("requested", 1000)
        return {
            "action": "refund",
            "amount": amount,
            "messages": [{"role": "planner", "content": f"plan: refund {amount}"}],
        }

    def human_approval(state: dict[str, Any]) -> dict[str, Any]:
        return {"approval_recorded": True}

    def refund(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        receipt = ctx.once(
            "payment",
            lambda: service.refund(state["amount"], idempotency_key=ctx.idempotency_key),
        )
        return {
            "status": "success",
            "receipt": receipt["refund_id"],
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
    checkpointer: Checkpointer | None = None,
    payments: PaymentService | list[Any] | None = None,
) -> Workflow:
    """The compiled refund workflow (in memory unless a checkpointer is given).

    Example:
        >>> from agentnb.examples import PaymentService, build_refund_workflow
        >>> payments = PaymentService()
        >>> workflow = build_refund_workflow(payments=payments)
        >>> small = workflow.invoke({"requested": 40})  # under the threshold: no approval
        >>> str(small.status), payments.refunds
        ('completed', [40])
        >>> big = workflow.start({"requested": 800}).run()
        >>> str(big.status), big.node
        ('pending', 'human_approval')
    """
    return build_refund_graph(payments).compile(checkpointer)
