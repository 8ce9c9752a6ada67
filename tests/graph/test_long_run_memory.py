"""A 1,000-step run holds one live state in the kernel, not its history: measured in bytes."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from agentnb import END, Checkpointer, MemoryCheckpointer, SqliteCheckpointer, StateGraph
from agentnb._json import dumps

pytestmark = pytest.mark.slow

STEPS = 1000
MESSAGE = "x" * 200


def loop(store: Checkpointer) -> StateGraph:
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": [MESSAGE]})
    g.set_entry_point("agent")
    g.add_conditional_edge(
        "agent", lambda s: "agent" if s["count"] < STEPS else END, ["agent", END]
    )
    return g


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_thousand_step_run_keeps_memory_linear_in_what_changed(
    backend: str, tmp_path: Path
) -> None:
    store: Checkpointer = (
        MemoryCheckpointer() if backend == "memory" else SqliteCheckpointer(tmp_path / "r.db")
    )
    with store:
        workflow = loop(store).compile(store, max_steps=STEPS + 1)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            run = workflow.start({"count": 0, "messages": []})
            while run.status == "running":
                run.step()
            history = run.history()
            for item in history[::100]:  # walking the history holds no state either
                assert len(item.state["messages"]) == item.step
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        final = len(dumps(run.state))
        assert len(history) == STEPS + 1
        # Every checkpoint held whole would be ~STEPS / 2 final states (100 MB here). The
        # kernel holds the live state; a memory store also its log and chain: linear, at
        # most 2 KiB a step (events, a delta, geometric snapshots) beside a few states.
        per_step = 2048 if backend == "memory" else 0
        limit = 3 * final + STEPS * per_step + 2 * 2**20
        print(f"{backend}: {held / 2**20:.2f} MiB held, limit {limit / 2**20:.2f} MiB")
        assert held < limit
