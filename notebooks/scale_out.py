"""The refunds workflow notebook 08's workers run, imported by each worker process::

    agentnb worker --db postgresql://... --workflow scale_out:refunds

(run where this file is, so ``scale_out`` is importable). A worker needs the workflow's
code; the database holds everything else. Each node records which process ran it (its
``pid``), so the notebook can see which worker did what without depending on who won.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from agentnb import END, Checkpointer, NodeContext, StateGraph, Workflow

APPROVAL_THRESHOLD = 500


async def planner(state: dict[str, Any]) -> dict[str, Any]:
    # Looking the order up is I/O (an API): while one run awaits it, the worker's event
    # loop drives its other runs.
    await asyncio.sleep(state.get("lookup_seconds", 0.1))
    return {"amount": state["requested"], "planned_by": os.getpid()}


def human_approval(state: dict[str, Any]) -> dict[str, Any]:
    return {"approval_recorded": True}


def refund(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    receipt = ctx.once("payment", lambda: f"refunded {state['amount']} ({ctx.idempotency_key})")
    return {"receipt": receipt, "refunded_by": os.getpid()}


def route(state: dict[str, Any]) -> str:
    return "needs_approval" if state["amount"] > APPROVAL_THRESHOLD else "small"


def refunds(store: Checkpointer) -> Workflow:
    """planner -> (approval above 500) -> refund; what ``--workflow scale_out:refunds`` loads."""
    graph = StateGraph("refunds")
    graph.add_node("planner", planner, description="look the order up (an API call)")
    graph.add_node("human_approval", human_approval, description="a person signs off")
    graph.add_node("refund", refund, description="pay, once")
    graph.set_entry_point("planner")
    graph.add_conditional_edge(
        "planner", route, {"needs_approval": "human_approval", "small": "refund"}
    )
    graph.add_edge("human_approval", "refund").add_edge("refund", END)
    graph.add_interrupt_before("human_approval")
    return graph.compile(store)
