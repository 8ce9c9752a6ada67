"""Worker processes on one PostgreSQL database, for tests/store/test_postgres_processes.py.

Usage: python pg_worker.py run DSN RUN_ID   start (or continue) RUN_ID and drive it to the end
       python pg_worker.py race DSN GO I IDS decide every run in the IDS file once GO exists

``run`` drives a chain of ``AGENTNB_STEPS`` nodes. Each node does one side effect through
``ctx.once`` (a line appended to ``AGENTNB_EFFECTS`` when it really runs) and appends its
name to ``AGENTNB_TRACE``. The node named by ``AGENTNB_HOLD_AT`` prints ``held`` once its
effect is recorded and waits until the file ``AGENTNB_GO`` exists (a test kills the process
or restarts the server meanwhile). ``AGENTNB_HOST`` makes this process claim another host
name, so a lease left by a dead process here is only free once it has expired.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import agentnb.store.leases
from agentnb import ApprovalNotPending, NodeContext, PostgresCheckpointer, RunBusy, StateGraph

DEADLINE = 120.0


def node(name: str) -> Any:
    def body(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        def effect() -> str:
            with open(os.environ["AGENTNB_EFFECTS"], "a") as f:
                f.write(f"{name}\n")
            return name

        ctx.once("effect", effect)
        with open(os.environ["AGENTNB_TRACE"], "a") as f:
            f.write(f"{name}\n")
        if name == os.environ.get("AGENTNB_HOLD_AT"):
            print("held", flush=True)
            go = Path(os.environ["AGENTNB_GO"])
            deadline = time.monotonic() + DEADLINE
            while not go.exists():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{go} never appeared")
                time.sleep(0.01)
        return {"done": [*state.get("done", []), name]}

    return body


def drive(dsn: str, run_id: str) -> dict[str, Any]:
    steps = int(os.environ.get("AGENTNB_STEPS", "6"))
    lease = float(os.environ.get("AGENTNB_LEASE", "30"))
    busy = 0
    with PostgresCheckpointer(dsn, reconnect_seconds=60) as store:
        g = StateGraph("chain")
        names = [f"n{i}" for i in range(steps)]
        for name in names:
            g.add_node(name, node(name))
        g.set_entry_point(names[0])
        for a, b in itertools.pairwise(names):
            g.add_edge(a, b)
        wf = g.compile(store, lease_seconds=lease)
        known = {r.run_id for r in store.list_runs()}
        run = wf.attach(run_id) if run_id in known else wf.start({"done": []}, run_id=run_id)
        deadline = time.monotonic() + DEADLINE
        while True:
            try:
                run.run()
                break
            except RunBusy as exc:  # another owner's lease: wait until it expires
                busy += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(max(0.0, exc.expires_at - time.time()) + 0.05)
        reconnects = store._session.reconnects
        status, state = str(run.status), run.state
    return {"status": status, "state": state, "busy": busy, "reconnects": reconnects}


def race(dsn: str, go: Path, me: str, ids_file: Path) -> dict[str, int]:
    run_ids = json.loads(ids_file.read_text())
    random.shuffle(run_ids)
    won = lost = 0
    with PostgresCheckpointer(dsn) as store:
        print("ready", flush=True)
        deadline = time.monotonic() + DEADLINE
        while not go.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{go} never appeared")
            time.sleep(0.005)
        for run_id in run_ids:
            try:
                store.decide(run_id, "approved", f"worker-{me}")
                won += 1
            except ApprovalNotPending:
                lost += 1
    return {"won": won, "lost": lost}


def main(argv: list[str]) -> int:
    if os.environ.get("AGENTNB_HOST"):
        agentnb.store.leases._HOST = os.environ["AGENTNB_HOST"]
    command, dsn = argv[0], argv[1]
    if command == "run":
        print(json.dumps(drive(dsn, argv[2])), flush=True)
    elif command == "race":
        print(json.dumps(race(dsn, Path(argv[2]), argv[3], Path(argv[4]))), flush=True)
    else:
        raise SystemExit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
