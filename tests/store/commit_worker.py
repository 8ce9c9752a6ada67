"""A process whose writes a test cuts off in their COMMIT, for tests/store/test_postgres_commits.py.

Usage: python commit_worker.py DSN [steps]

It opens a :class:`~agentnb.PostgresCheckpointer` and answers commands read from stdin,
one a line, with one JSON line on stdout each, which also gives the backend ``pid`` of
its connection (the first line: ``{"ready": true, "pid": PID}``):

* ``approve RUN_ID`` — ``workflow.attach(RUN_ID).approve(by="ada")`` of the refund
  workflow (its runs started by the test): ``{"ok": true, "id": ID, "accepted": ...}``,
  ``ID`` the audit row's;
* ``step N STATUS`` — commit step ``N`` (its checkpoint ``{"n": N}``, its event seq ``N + 1``)
  of the run ``steps``, which this process created (given ``steps``) and holds the lease of:
  ``{"ok": true}``; ``STATUS`` ``running`` after ``running`` is the one-statement step,
  anything else the shared transaction.

A write that raises says ``{"ok": false, "error": TYPE, "typed": IS_A_STORE_ERROR,
"message": ..., "where": TRACEBACK}``, and the process goes on reading commands (a retry is
the next one).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
from typing import Any

from agentnb import PostgresCheckpointer, Status
from agentnb.errors import StoreError
from agentnb.examples import build_refund_workflow
from agentnb.store.base import CheckpointWrite, StepCommit, new_owner
from agentnb.store.records import Event, RunRecord

STEPS = "steps"


def start_steps(store: PostgresCheckpointer) -> int:
    now = time.time()
    record = RunRecord(STEPS, "g", "s", Status.RUNNING, "a", 0, 1, 10_000, now, now)
    store.create_run(
        record,
        CheckpointWrite(0, "a", '{"n":0}'),
        [Event(STEPS, 1, 0, "run_started", "a", {}, now)],
    )
    return store.acquire(STEPS, new_owner(), lease_seconds=3600).fence


def step(store: PostgresCheckpointer, fence: int, n: int, status: str) -> None:
    event = Event(STEPS, n + 1, n, "node_completed", "a", {"n": n}, time.time())
    change = StepCommit(Status(status), "a", n, [event], CheckpointWrite(n, "a", f'{{"n":{n}}}'))
    store.commit(STEPS, fence, change, lease_seconds=3600)


def answer(store: PostgresCheckpointer, fence: int | None, words: list[str]) -> dict[str, Any]:
    try:
        if words[0] == "approve":
            decision = build_refund_workflow(store).attach(words[1]).approve(by="ada")
            return {"ok": True, "id": decision.id, "accepted": decision.accepted}
        assert fence is not None, "started without 'steps'"
        step(store, fence, int(words[1]), words[2])
        return {"ok": True}
    except Exception as exc:  # the test judges what escaped
        return {
            "ok": False,
            "error": f"{type(exc).__module__}.{type(exc).__name__}",
            "typed": isinstance(exc, StoreError),
            "message": str(exc),
            "where": traceback.format_exc(limit=-8),  # where it escaped, for the failure
        }


def pid(store: PostgresCheckpointer) -> int:
    """The backend pid of the store's connection (a test watches it in pg_stat_activity)."""
    return int(store._session.conn.info.backend_pid)


def main(dsn: str, *steps: str) -> int:
    with PostgresCheckpointer(dsn, reconnect_seconds=60) as store:
        fence = start_steps(store) if steps == ("steps",) else None
        print(json.dumps({"ready": True, "pid": pid(store)}), flush=True)
        for line in sys.stdin:
            said = answer(store, fence, line.split())
            print(json.dumps({**said, "pid": pid(store)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
