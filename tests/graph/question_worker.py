"""A node that charges, then asks a question (used by test_question_crash.py).

python question_worker.py DB LEDGER start|respond|resume [stop]

``start`` runs until the question; ``respond`` answers it; ``resume`` continues the run —
with ``stop``, the node prints "stopped" after ``ctx.interrupt`` returned the answer and
waits to be killed there, between the answer and the node's end. Node calls and charges
are rows in LEDGER, which outlives a killed process.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from typing import Any

from agentnb import NodeContext, SqliteCheckpointer, StateGraph

RUN = "question-run"


def build(store: SqliteCheckpointer, ledger: sqlite3.Connection, stop: bool) -> Any:
    def pay(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        ledger.execute("INSERT INTO calls VALUES ('pay')")

        def charge() -> str:
            ledger.execute("INSERT INTO charges VALUES (?)", (ctx.idempotency_key,))
            return "charged"

        receipt = ctx.once("charge", charge)
        amount = ctx.interrupt({"question": "Amount?", "schema": {"type": "integer"}})
        if stop:
            print("stopped", flush=True)
            time.sleep(3600)  # killed here, after the answer, before the node returns
        return {"receipt": receipt, "amount": amount}

    g = StateGraph("question")
    g.add_node("pay", pay).set_entry_point("pay")
    return g.compile(store)


def main(db: str, ledger_path: str, command: str, *flags: str) -> None:
    ledger = sqlite3.connect(ledger_path, isolation_level=None)
    ledger.execute("CREATE TABLE IF NOT EXISTS calls (node TEXT)")
    ledger.execute("CREATE TABLE IF NOT EXISTS charges (key TEXT)")
    with SqliteCheckpointer(db) as store:
        workflow = build(store, ledger, stop="stop" in flags)
        if command == "start":
            run = workflow.start({}, run_id=RUN).run()
        elif command == "respond":
            run = workflow.attach(RUN)
            run.respond(42, by="ada")
        else:
            run = workflow.attach(RUN).run()
        print(json.dumps({"status": run.status.value, "state": run.state}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
