"""Writes entries-0011.db with the agentnb of commit e166d3f (schema version 11: the journal's
columns in their old order, ``state`` before ``events``, ``at``, ``tasks`` and ``kind``), as
the migration test of 0012 reads it.

Usage: git archive e166d3f agentnb | tar -x -C /tmp/main011
       PYTHONPATH=/tmp/main011 python tests/store/data/make_entries_db.py OUT.db
It must run against the old code: the point of the file is that this branch did not write it.

Runs (each loop step's state is a function of the step, so the test knows it without the file):
* ``long``: 230 steps of the loop, completed (snapshot, skips, deltas);
* ``edited``: 105 steps, a refused approval (a stale digest), an approval with edits
  (``count`` = 1000: step 105 saved twice), then the paused node and one more step;
* ``big``: 30 steps of the loop from a state carrying a 40 KB text (its snapshot and the
  decisions' rows spill onto overflow pages);
* ``branches``: plan -> (b, c, d) -> report with an interrupt before ``c``, left pending
  (a frontier in ``tasks``, a held task, the other branches' results);
* ``open``: 150 steps of 230, left running (the test drives it on with the new code).
"""

from __future__ import annotations

import operator
import sqlite3
import sys
from typing import Any

import agentnb
from agentnb import END, SqliteCheckpointer, StateGraph

BLOB = "".join(f"{i:05d}" for i in range(8000))
"""40,000 characters no compression or dedup could make small, in ``big``'s state."""


def loop(store: SqliteCheckpointer, steps: int, *, pause_at: int | None = None) -> Any:
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


def fan(store: SqliteCheckpointer) -> Any:
    g = StateGraph("branches", reducers={"done": operator.add})
    g.add_node("plan", lambda s: None)
    for name in ("b", "c", "d"):
        g.add_node(name, lambda s, name=name: {"done": [name]})
    g.add_node("report", lambda s: {"count": len(s["done"])})
    g.set_entry_point("plan")
    for name in ("b", "c", "d"):
        g.add_edge("plan", name)
    g.add_edge(["b", "c", "d"], "report")
    g.add_interrupt_before("c")
    return g.compile(store)


def main(path: str) -> None:
    with SqliteCheckpointer(path) as store:
        start = {"count": 0, "messages": []}
        loop(store, 230).start(start, run_id="long").run()
        edited = loop(store, 310, pause_at=105).start(start, run_id="edited").run()
        assert edited.status == "pending", edited.status
        try:
            store.decide("edited", "approved", "mallory", expected_digest="0" * 64)
        except agentnb.AgentnbError as exc:
            print("refused:", type(exc).__name__)
        edited.approve(by="ada", update={"count": 1000})
        edited.run()
        loop(store, 30).start({**start, "blob": BLOB}, run_id="big").run()
        held = fan(store).start({"done": []}, run_id="branches").run()
        assert held.status == "pending", held.status
        run = loop(store, 230).start(start, run_id="open")
        for _ in range(150):
            run.step()
        print({r.run_id: (str(r.status), r.step) for r in store.list_runs()})
    db = sqlite3.connect(path)  # a small file: the WAL folded in, the free pages gone
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main(sys.argv[1])
