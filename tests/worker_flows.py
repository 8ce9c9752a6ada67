"""Workflows the worker-process tests run with ``agentnb worker --workflow worker_flows:NAME``.

Each node that does work appends ``RUN_ID PID`` to the file named by ``AGENTNB_EXEC_LOG``
(every execution, so a run executed twice shows twice) and does its side effect through
``ctx.once`` (the effect ledger: at most once per step, whatever the executions).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from agentnb import Checkpointer, NodeContext, State, Statechart, StateGraph, Workflow

LEASE_SECONDS = 1.5
"""Short, so a killed worker's runs are taken over quickly."""
PATIENT_SECONDS = 60.0
"""Long, for tests where no lease may expire: on two loaded cores a worker can stall past
1.5 s, and a takeover then rightly runs the node again (paying once) — the SIGKILL test's
subject, not that of the claim races."""


def _executed(ctx: NodeContext) -> None:
    with open(os.environ["AGENTNB_EXEC_LOG"], "a") as f:
        f.write(f"{ctx.run_id} {os.getpid()}\n")


async def _pay(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    _executed(ctx)
    receipt = ctx.once("pay", lambda: f"paid {ctx.run_id} by {os.getpid()}")
    marker = os.environ.get("AGENTNB_MARKER")
    if marker:  # tell the test this node is in flight, past its side effect
        Path(marker).write_text(str(os.getpid()))
    if os.environ.get("AGENTNB_HANG"):  # until SIGKILL
        await asyncio.sleep(3600)
    release = os.environ.get("AGENTNB_RELEASE")
    if release:  # hold the step in flight until the test says so (30 s at most)
        deadline = time.monotonic() + 30
        while not Path(release).exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    return {"receipt": receipt}


def _done(state: dict[str, Any]) -> dict[str, Any]:
    return {"done": True}


def counted(store: Checkpointer, lease_seconds: float = LEASE_SECONDS) -> Workflow:
    """pay -> done."""
    g = StateGraph("counted").add_node("pay", _pay).add_node("done", _done)
    g.set_entry_point("pay").add_edge("pay", "done")
    return g.compile(store, lease_seconds=lease_seconds)


def patient(store: Checkpointer) -> Workflow:
    """``counted`` with a lease no stall outlasts (PATIENT_SECONDS)."""
    return counted(store, lease_seconds=PATIENT_SECONDS)


def approval(store: Checkpointer) -> Workflow:
    """plan -> (approval) -> pay -> done."""
    g = StateGraph("approval").add_node("plan", lambda s: {"amount": 300})
    g.add_node("pay", _pay).add_node("done", _done)
    g.set_entry_point("plan").add_edge("plan", "pay").add_edge("pay", "done")
    g.add_interrupt_before("pay")
    return g.compile(store, lease_seconds=PATIENT_SECONDS)


RUNAWAY = 30
"""Executions of one run after which ``poisoned``'s node stops its worker (SIGTERM): a
worker that spins on a run ends the test with that count, not a hang."""


def _poison(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    _executed(ctx)
    log = Path(os.environ["AGENTNB_EXEC_LOG"]).read_text().split()
    if log.count(ctx.run_id) >= RUNAWAY:
        os.kill(os.getpid(), signal.SIGTERM)
    return {"x": 10**5000 if state["bad"] else 1}


def poisoned(store: Checkpointer) -> Workflow:
    """start -> poison, whose delta is an int too long to store when ``bad``."""
    g = StateGraph("poisoned").add_node("start", lambda s: {"started": True})
    g.add_node("poison", _poison).set_entry_point("start").add_edge("start", "poison")
    return g.compile(store, lease_seconds=PATIENT_SECONDS)


light = Statechart(
    "light",
    [State("on", after={5: "off"}, on={"toggle": "off"}), State("off", on={"toggle": "on"})],
)
"""A statechart with a durable timer (``after`` 5 s): a worker fires it when due."""
