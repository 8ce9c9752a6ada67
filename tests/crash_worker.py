"""A refund worker that can be killed at chosen points (used by test_crash.py).

python crash_worker.py DB PAYMENTS RUN_ID start|resume

AGENTNB_STOP_AT names where to stop (print "stopped" and wait to be killed):
  after-payment      the payment service has paid, ctx.once has not recorded it yet
  after-ledger       ctx.once has recorded the payment, the step is not checkpointed
  in-commit          inside the step's transaction, after the INSERT, before COMMIT
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from typing import Any

from agentnb import SqliteCheckpointer
from agentnb.examples.refund import PaymentService, build_refund_workflow

STOP_AT = os.environ.get("AGENTNB_STOP_AT", "")


def stop(point: str) -> None:
    if point == STOP_AT:
        print("stopped", flush=True)
        time.sleep(3600)


class FilePayments(PaymentService):
    """Payments kept in their own SQLite file; the idempotency key is UNIQUE there."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS payments (key TEXT PRIMARY KEY, amount INT, id TEXT)"
        )

    def refund(self, amount: int, *, idempotency_key: str) -> dict[str, Any]:
        self.db.execute(
            "INSERT OR IGNORE INTO payments VALUES (?, ?, 're_' || "
            "(SELECT count(*) + 1 FROM payments))",
            (idempotency_key, amount),
        )
        amount, refund_id = self.db.execute(
            "SELECT amount, id FROM payments WHERE key = ?", (idempotency_key,)
        ).fetchone()
        stop("after-payment")
        return {"refund_id": refund_id, "amount": amount}


class StoppingStore(SqliteCheckpointer):
    def record_effect(self, key: str, **fields: Any) -> str:
        stored = super().record_effect(key, **fields)
        stop("after-ledger")
        return stored

    def commit(self, run_id: str, fence: int, change: Any, *, lease_seconds: float) -> None:
        if STOP_AT == "in-commit" and change.node == "END":
            # Hold the step's transaction open, as a crash mid-write would leave it.
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(
                "INSERT INTO entries (run_id, seq, step, node, state, events, at) "
                "VALUES (?, ?, ?, ?, NULL, '[]', 0)",
                (run_id, 10**6, change.step, change.node),
            )
            stop("in-commit")
        super().commit(run_id, fence, change, lease_seconds=lease_seconds)


def main(db: str, payments: str, run_id: str, command: str) -> None:
    with StoppingStore(db) as store:
        workflow = build_refund_workflow(store, FilePayments(payments))
        if command == "start":
            run = workflow.start({"requested": 300}, run_id=run_id)
        else:
            run = workflow.attach(run_id)
        run.run()
        print(json.dumps({"status": run.status.value, "state": run.state}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
