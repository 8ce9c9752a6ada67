"""The refund as a state machine: the same story as the workflow, told as states and events.

A workflow is a state machine whose state is *where the run is* (``run.node``, the node
that runs next) and whose data is the workflow state (a state machine's *context*). This
machine has one state per position of the refund workflow and one event per thing that
moves it on — so the two can be set side by side::

    machine state     run.node / run.status          event that leaves it
    planner           planner, running               planned (guarded by the amount)
    human_approval    human_approval, pending        approved / rejected
    refund            refund, running                paid
    done (final)      END, completed
    rejected (final)  human_approval, rejected
"""

from __future__ import annotations

from typing import Any

from agentnb.examples.refund import APPROVAL_THRESHOLD
from agentnb.fsm.machine import StateMachine

__all__ = ["build_refund_machine"]


# Guard and actions are module functions with plain names: the diagram shows the guard's.
def needs_approval(context: dict[str, Any], payload: Any) -> bool:
    """Amounts above the threshold go to a human."""
    return bool(payload) and payload["amount"] > APPROVAL_THRESHOLD


def record_amount(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"amount": payload["amount"]}


def record_receipt(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"status": "success", "receipt": (payload or {}).get("receipt")}


def build_refund_machine() -> StateMachine:
    """The refund workflow's positions as a :class:`~agentnb.fsm.StateMachine`.

    Events carry what the workflow's nodes would return: ``planned`` the amount,
    ``paid`` the receipt. Amounts above ``APPROVAL_THRESHOLD`` go to ``human_approval``.

    Example:
        >>> from agentnb.examples import build_refund_machine
        >>> machine = build_refund_machine()
        >>> machine.initial, machine.states
        ('planner', ('planner', 'human_approval', 'refund', 'done', 'rejected'))
    """
    machine = StateMachine(
        "refund",
        states=["planner", "human_approval", "refund", "done", "rejected"],
        initial="planner",
        final=["done", "rejected"],
        description="the refund workflow, one state per position of a run",
    )
    machine.add_transition(
        "planner", "planned", "human_approval", guard=needs_approval, action=record_amount
    )
    machine.add_transition("planner", "planned", "refund", action=record_amount)
    machine.add_transition("human_approval", "approved", "refund")
    machine.add_transition("human_approval", "rejected", "rejected")
    machine.add_transition("refund", "paid", "done", action=record_receipt)
    return machine
