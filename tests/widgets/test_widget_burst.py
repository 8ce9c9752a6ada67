"""A workflow committing thousands of events per second reaches the view coalesced, whole."""

from __future__ import annotations

import time

from widget_support import Frontend, run_async, ticker_workflow, until

from agentnb import SqliteCheckpointer

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
            await until(lambda: fe.view._seq == total and len(fe.log()) == total)
            return fe, time.monotonic() - started
        finally:
            fe.close()

    fe, elapsed = run_async(main)
    events = run.events
    assert len(events) >= 2 * STEPS  # node_start + state_update per step, and more
    # Every event arrives exactly once, in order: replay first, then live batches.
    assert fe.logged_seqs() == [e.seq for e in events]
    live = [m for m in fe.customs("events") if not m.get("view")]
    budget = elapsed * MAX_RATE + 2  # the window may open right at the start and the end
    assert len(live) <= budget, (len(live), elapsed)
    assert len(fe.updates()) <= budget + 2, (len(fe.updates()), elapsed)
    assert max(len(m["events"]) for m in live) > 10  # they really were coalesced
    assert fe.view.state == {"n": STEPS}
