"""A workflow and worker entry points run in separate processes by the SQLite tests.

Usage: python worker.py start DB       start a run; node 'b' blocks if AGENTNB_BLOCK is set
       python worker.py resume DB RUN  attach to RUN and run it to the end
       python worker.py race DB GO I IDS  decide every run in the IDS file once GO exists
Each node appends its name to the file named by AGENTNB_TRACE, so a test can count runs.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from agentnb import ApprovalNotPending, SqliteCheckpointer, StateGraph, Workflow


def traced(name: str) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        with open(os.environ["AGENTNB_TRACE"], "a") as f:
            f.write(name + "\n")
        if name == "b" and os.environ.get("AGENTNB_BLOCK"):
            print("blocked", flush=True)
            time.sleep(3600)
        return {name: state.get("n", 0) + 1, "n": state.get("n", 0) + 1}

    return node


def workflow(store: SqliteCheckpointer) -> Workflow:
    g = StateGraph("crash")
    for name in ("a", "b", "c"):
        g.add_node(name, traced(name))
    g.set_entry_point("a").add_edge("a", "b").add_edge("b", "c")
    return g.compile(store)


def main(argv: list[str]) -> int:
    command, db = argv[0], argv[1]
    with SqliteCheckpointer(db) as store:
        if command == "start":
            run = workflow(store).start({"n": 0}, run_id="crash-run")
            run.run()
        elif command == "resume":
            run = workflow(store).attach(argv[2])
            run.run()
            print(json.dumps({"status": run.status.value, "state": run.state}))
        elif command == "race":
            go, me = Path(argv[2]), argv[3]
            run_ids = json.loads(Path(argv[4]).read_text())
            random.shuffle(run_ids)
            print("ready", flush=True)
            while not go.exists():
                time.sleep(0.001)
            won, lost = 0, 0
            for run_id in run_ids:
                try:
                    store.decide(run_id, "approved", f"worker-{me}")
                    won += 1
                except ApprovalNotPending:
                    lost += 1
            print(json.dumps({"won": won, "lost": lost}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
