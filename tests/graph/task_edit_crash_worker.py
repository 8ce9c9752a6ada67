"""A superstep resumed after its held tasks were approved, one with an edit; killable.

python task_edit_crash_worker.py DB LEDGER start|resume

``start`` runs to the pause (``b`` and ``d`` held), approves ``b`` with the edit
``{"amount": 5, "notes": ["edited"]}`` and ``d`` as shown, and continues: ``b`` finishes at
once ("saved b" is printed when its result is durable) while ``d`` waits to be killed.
``resume`` continues the run to its end and prints the final state. Node calls are rows in
LEDGER, which outlives the killed process.
"""

from __future__ import annotations

import asyncio
import json
import operator
import sys
from typing import Any

from agentnb import StateGraph
from tests.graph.branch_worker import Announcing, Ledger

RUN = "edited"


def build(store: Announcing, ledger: Ledger, block: bool) -> Any:
    def branch(name: str) -> Any:
        async def node(state: dict[str, Any]) -> dict[str, Any]:
            ledger.call(name)
            if block and name == "d":
                await asyncio.Event().wait()  # killed here, after b's result was saved
            return {"seen": [f"{name}:{state['amount']}"]}

        return node

    g = StateGraph("edited", reducers={"seen": operator.add, "notes": operator.add})
    g.add_node("plan", lambda state: None)
    for name in ("b", "d"):
        g.add_node(name, branch(name))
        g.add_edge("plan", name)
    g.set_entry_point("plan").add_interrupt_before("b", "d")
    return g.compile(store)


def main(db: str, ledger_path: str, command: str) -> None:
    ledger = Ledger(ledger_path)
    with Announcing(db) as store:
        workflow = build(store, ledger, block=command == "start")
        if command == "start":
            run = workflow.start({"amount": 100, "seen": [], "notes": []}, run_id=RUN).run()
            run.approve(by="ada", task="b", update={"amount": 5, "notes": ["edited"]})
            run.approve(by="bob", task="d")
            run.run()
            return
        run = workflow.attach(RUN).run()
        print(json.dumps({"status": run.status.value, "state": run.state}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
