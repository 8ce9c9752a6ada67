"""A workflow committing thousands of events per second reaches the view coalesced, whole.

The newest rows of each batch are sent unasked (at most a page of them); every other row
is there for the view to ask for when it scrolls to it.
"""

from __future__ import annotations

import time

from widget_support import Frontend, run_async, ticker_workflow, until

from agentnb import SqliteCheckpointer
from agentnb.widgets._log import PAGE

STEPS = 1000
MAX_RATE = 10.0


def test_a_burst_is_sent_in_bounded_batches_and_no_event_is_lost(
    store: SqliteCheckpointer,
) -> None:
    run = ticker_workflow(store, STEPS).start({"n": 0})

    async def main() -> tuple[Frontend, float]:
        fe = Frontend(run, max_rate=MAX_RATE)
        try:
            fe.hello()
            await until(lambda: fe.customs("events"), what="the replay")
            started = time.monotonic()
            fe.click("run")
            await until(lambda: fe.view.status == "completed" and not fe.view.busy, 60)
            total = len(run.events)
            await until(lambda: fe.view._seq == total and fe.total() == total)
            elapsed = time.monotonic() - started
            fe.seqs = await fe.whole_log()  # type: ignore[attr-defined]
            return fe, elapsed
        finally:
            fe.close()

    fe, elapsed = run_async(main)
    events = run.events
    assert len(events) >= 2 * STEPS  # node_start + state_update per step, and more
    # Every event is in the log exactly once, in order, scrolled through page by page.
    assert fe.seqs == [e.seq for e in events]  # type: ignore[attr-defined]
    live = [m for m in fe.customs("events") if not m.get("view")]
    # The rows sent unasked are the newest of each batch, each at its place in the log.
    assert all(len(m["events"]) <= PAGE for m in live)
    for m in live:
        assert [r["seq"] for r in m["events"]] == [events[r["i"]].seq for r in m["events"]]
        assert m["events"][-1]["i"] == m["total"] - 1
    budget = elapsed * MAX_RATE + 2  # the window may open right at the start and the end
    assert len(live) <= budget, (len(live), elapsed)
    assert len(fe.updates()) <= budget + 2, (len(fe.updates()), elapsed)
    assert max(len(m["events"]) for m in live) > 10  # they really were coalesced
    assert fe.view.state == {"n": STEPS}
