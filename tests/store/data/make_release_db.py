"""Writes release-0.1.0.db with the agentnb of a release checkout (how the file was made).

Usage: git archive a0afa00 agentnb | tar -x -C /tmp/release
       PYTHONPATH=/tmp/release python tests/store/data/make_release_db.py OUT.db
It must run against the old code: the point of the file is that this branch did not write it.
"""

from __future__ import annotations

import sys

import agentnb
from agentnb import END, SqliteCheckpointer, StateGraph
from agentnb.examples import build_refund_workflow


def main(path: str) -> None:
    with SqliteCheckpointer(path) as store:
        g = StateGraph("loop")
        g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": [f"m{s['count']}"]})
        g.set_entry_point("agent")
        g.add_conditional_edge(
            "agent", lambda s: "agent" if s["count"] < 5 else END, ["agent", END]
        )
        loop = g.compile(store, max_steps=10)
        loop.start({"count": 0, "messages": []}, run_id="loop-completed").run()
        refunds: list[int] = []
        refund = build_refund_workflow(store, refunds)
        refund.start({"requested": 1000}, run_id="refund-pending").run()
        refund.start({"requested": 900}, run_id="refund-rejected").run()
        try:
            store.decide("refund-rejected", "approved", "mallory", expected_digest="0" * 64)
        except agentnb.AgentnbError as exc:
            print("refused:", type(exc).__name__)
        store.decide("refund-rejected", "rejected", "ada", comment="duplicate")
        refund.start({"requested": 700}, run_id="refund-approved").run()
        store.decide("refund-approved", "approved", "ada", comment="ok")
        refund.attach("refund-approved").run()
        print({r.run_id: str(r.status) for r in store.list_runs()}, refunds)


if __name__ == "__main__":
    main(sys.argv[1])
