"""A worker driving three parallel branches, killable after the first one finished.

python branch_worker.py DB LEDGER RUN_ID start|resume

``start`` runs ``a`` then the superstep of ``b1``, ``b2``, ``b3``: ``b1`` finishes at once;
``b2`` and ``b3`` charge through ``ctx.once`` and then wait forever. The store prints
"saved b1" once ``b1``'s result is durable, so the test can SIGKILL the process right then.
``resume`` attaches, steps once (printing which tasks ran and which were recovered), runs
to the end and prints the final state. Every node call and every charge is a row in the
LEDGER database, which outlives the killed process.
"""

from __future__ import annotations

import asyncio
import json
import operator
import sqlite3
import sys
from typing import Any

from agentnb import NodeContext, SqliteCheckpointer, StateGraph
from agentnb.store.records import PendingWrite


class Ledger:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("CREATE TABLE IF NOT EXISTS calls (node TEXT)")
        self.db.execute("CREATE TABLE IF NOT EXISTS charges (key TEXT)")

    def call(self, node: str) -> None:
        self.db.execute("INSERT INTO calls VALUES (?)", (node,))

    def charge(self, key: str) -> str:
        self.db.execute("INSERT INTO charges VALUES (?)", (key,))
        return f"charged {key}"


class Announcing(SqliteCheckpointer):
    def save_write(self, run_id: str, fence: int, write: PendingWrite) -> None:
        super().save_write(run_id, fence, write)
        print(f"saved {write.task_id}", flush=True)


def build(store: SqliteCheckpointer, ledger: Ledger, block: bool) -> Any:
    def branch(name: str) -> Any:
        async def node(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
            ledger.call(name)
            receipt = ctx.once("charge", lambda: ledger.charge(ctx.idempotency_key))
            if block and name != "b1":
                await asyncio.Event().wait()  # killed here
            return {"receipts": [receipt]}

        return node

    g = StateGraph("branches", reducers={"receipts": operator.add})
    g.add_node("a", lambda state: ledger.call("a"))
    for name in ("b1", "b2", "b3"):
        g.add_node(name, branch(name))
    g.add_node("done", lambda state: {"count": len(state["receipts"])})
    g.set_entry_point("a")
    for name in ("b1", "b2", "b3"):
        g.add_edge("a", name)
    g.add_edge(["b1", "b2", "b3"], "done")
    return g.compile(store)


def main(db: str, ledger_path: str, run_id: str, command: str) -> None:
    ledger = Ledger(ledger_path)
    with Announcing(db) as store:
        workflow = build(store, ledger, block=command == "start")
        if command == "start":
            run = workflow.start({"receipts": []}, run_id=run_id)
            run.run()
            return
        run = workflow.attach(run_id)
        step = run.step()
        print(json.dumps({"tasks": sorted(step.tasks), "recovered": list(step.recovered)}))
        run.run()
        print(json.dumps({"status": run.status.value, "state": run.state}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
