"""Writes chains-0010.db with the agentnb of commit e864433 (schema version 10: checkpoints
as snapshots and deltas, no skips), as the migration test of 0011 reads it.

Usage: git archive e864433 agentnb | tar -x -C /tmp/main010
       PYTHONPATH=/tmp/main010 python tests/store/data/make_chain_db.py OUT.db
It must run against the old code: the point of the file is that this branch did not write it.

Runs (each step's state is a function of the step, so the test knows it without the file):
* ``long``: 230 steps of the loop, completed (geometric snapshots, long delta chains);
* ``edited``: 105 steps, then an approval with edits (``count`` = 1000: step 105 saved
  twice), then the paused node and one more step;
* ``fork``: forked from ``long`` at step 120, run to its end (step 230);
* ``open``: 150 steps of 230, left running (the test drives it on with the new code).
"""

from __future__ import annotations

import sqlite3
import sys

from agentnb import END, SqliteCheckpointer, StateGraph


def loop(store: SqliteCheckpointer, steps: int, *, pause_at: int | None = None) -> object:
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": [f"m{s['count']}"]})
    g.add_node("check", lambda s: None)
    g.set_entry_point("agent")
    g.add_conditional_edge(
        "agent",
        lambda s: "check" if s["count"] == pause_at else ("agent" if s["count"] < steps else END),
        ["agent", "check", END],
    )
    g.add_edge("check", "agent")
    g.add_interrupt_before("check")
    return g.compile(store, max_steps=10_000)


def main(path: str) -> None:
    with SqliteCheckpointer(path) as store:
        start = {"count": 0, "messages": []}
        long = loop(store, 230).start(start, run_id="long").run()
        edited = loop(store, 310, pause_at=105).start(start, run_id="edited").run()
        assert edited.status == "pending", edited.status
        edited.approve(by="ada", update={"count": 1000})
        edited.run()
        long.fork(120, run_id="fork").run()
        run = loop(store, 230).start(start, run_id="open")
        for _ in range(150):
            run.step()
        print({r.run_id: (str(r.status), r.step) for r in store.list_runs()})
    db = sqlite3.connect(path)  # a small file: the WAL folded in, the free pages gone
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main(sys.argv[1])
