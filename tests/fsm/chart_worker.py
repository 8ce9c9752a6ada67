"""A statechart with a timer, driven from separate processes by the durable-timer tests.

Usage: python chart_worker.py start DB ID NOW      start instance ID at clock time NOW
       python chart_worker.py hang DB ID NOW       start it, print "started", then block
       python chart_worker.py due DB GO NOW IDS...  once GO exists, run_due(NOW) on each ID
The 'due' command prints one JSON line: the records it fired, as [instance, event_id].
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agentnb import ManualClock, SqliteCheckpointer, State, Statechart
from agentnb.fsm import Assign, Send


def chart() -> Statechart:
    return Statechart(
        "kettle",
        [
            State(
                "heating",
                on_enter=[Send("boiled", delay=60, id="boil")],
                on={"boiled": {"target": "done", "action": [Assign("fired", "fired + 1")]}},
            ),
            State("done"),
        ],
        datamodel={"fired": 0},
    )


def main(argv: list[str]) -> int:
    command, db = argv[0], argv[1]
    with SqliteCheckpointer(db, timeout=60) as store:
        if command in ("start", "hang"):
            chart().start(argv[2], store=store, clock=ManualClock(float(argv[3])))
            if command == "hang":  # the test SIGKILLs this process: nothing is closed cleanly
                print("started", flush=True)
                time.sleep(3600)
            return 0
        go, now, ids = Path(argv[2]), float(argv[3]), argv[4:]
        deadline = time.monotonic() + 60
        while not go.exists():  # a start line, so the processes race
            if time.monotonic() > deadline:
                return 2
            time.sleep(0.01)
        fired = []
        for iid in ids:
            instance = chart().resume(iid, store=store, clock=ManualClock(now))
            fired += [[iid, r.event_id] for r in instance.run_due()]
        print(json.dumps(fired), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
