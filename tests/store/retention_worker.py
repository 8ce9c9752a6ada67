"""A worker that continues cancelled runs while another process prunes them.

Usage: python retention_worker.py DB GO IDS TRACE   continue every run in the IDS file once
GO exists. Each node that runs appends "NODE RUN_ID" to TRACE (O_APPEND: whole lines).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentnb import (
    NodeContext,
    RunBusy,
    RunNotFound,
    SqliteCheckpointer,
    StateGraph,
    Status,
    Workflow,
)
from agentnb.errors import LeaseLost, RunNotActive


def traced(name: str) -> Callable[[dict[str, Any], NodeContext], dict[str, Any]]:
    def node(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        trace = os.environ.get("AGENTNB_TRACE")
        if trace:
            with open(trace, "a") as f:
                f.write(f"{name} {ctx.run_id}\n")
        return {"n": state["n"] + 1}

    return node


def workflow(store: SqliteCheckpointer) -> Workflow:
    g = StateGraph("resumable")
    for name in ("a", "b", "c"):
        g.add_node(name, traced(name))
    g.set_entry_point("a").add_edge("a", "b").add_edge("b", "c")
    return g.compile(store)


def main(db: str, go: str, ids: str) -> int:
    run_ids = json.loads(Path(ids).read_text())
    random.shuffle(run_ids)
    with SqliteCheckpointer(db) as store:
        wf = workflow(store)
        print("ready", flush=True)
        while not Path(go).exists():
            time.sleep(0.001)
        for run_id in run_ids:
            try:
                run = wf.attach(run_id)
                if run.status != Status.CANCELLED:
                    continue
                run.run()
            except (RunNotFound, RunBusy, LeaseLost, RunNotActive):
                continue
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
