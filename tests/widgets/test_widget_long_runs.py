"""A long run in the panel: bounded memory in the kernel, every row reachable, past steps exact."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from widget_support import Frontend, run_async, ticker_workflow, until

from agentnb import MemoryCheckpointer, SqliteCheckpointer
from agentnb.render.extract import overlay_from_events
from agentnb.render.overlay import OverlayFold
from agentnb.widgets import _log
from agentnb.widgets._events import events_until, overlay_payload

STEPS = 3000


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounds small enough that a 3,000-step run crosses each of them many times."""
    monkeypatch.setattr(_log, "WINDOW", 300)
    monkeypatch.setattr(_log, "BLOCK", 64)
    monkeypatch.setattr(_log, "FOLD_EVERY", 500)
    monkeypatch.setattr(_log, "READ", 700)


class CountingStore(SqliteCheckpointer):
    """Records every read of the event log: how many events each was allowed to return."""

    limits: list[int | None]

    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Any]:
        self.limits.append(limit)
        return super().events(run_id, after=after, limit=limit)


def test_the_kernel_keeps_a_bounded_window_of_a_long_log_and_reads_it_in_pages(
    tmp_path: Any, small_bounds: None
) -> None:
    with CountingStore(tmp_path / "long.db") as store:
        store.limits = []
        run = ticker_workflow(store, STEPS).start({"n": 0}).run()
        total, last = len(run.events), run.events[-1].seq
        store.limits = []
        fe = Frontend(run)
        try:
            log = fe.view._log
            assert log.total == total
            assert log.seq == last
            assert log.held == 300  # the window, not the log
            # A bookmark per 64 rows of each filter and a fold per 500 events: a few hundred
            # small numbers for 6,000 events, never an event.
            assert log.bookmarks <= total // 64 + sum(n // 64 + 1 for n in log.counts.values()) + (
                total // 500 + 2
            )
            assert store.limits
            assert all(n is not None and n <= 700 for n in store.limits)
        finally:
            fe.close()


@pytest.mark.slow
def test_every_row_is_there_when_scrolled_to_and_only_the_newest_are_sent_unasked(
    store: SqliteCheckpointer, small_bounds: None
) -> None:
    run = ticker_workflow(store, STEPS).start({"n": 0}).run()
    events = run.events
    fe = Frontend(run)
    try:
        fe.hello()

        async def main() -> dict[str, Any]:
            await until(lambda: fe.customs("events", "v1"), what="the replay")
            whole = await fe.whole_log()
            middle = await fe.rows(len(events) // 2, 40)
            end = await fe.rows(len(events) - 10, 40)  # past the end: what there is
            updates = await fe.rows(1000, 25, "state_update")
            return {"whole": whole, "middle": middle, "end": end, "updates": updates}

        got = run_async(main)
    finally:
        fe.close()
    (replay,) = fe.customs("events", "v1")
    assert replay["total"] == len(events)
    assert len(replay["events"]) == _log.PAGE
    assert [r["seq"] for r in replay["events"]] == [e.seq for e in events[-_log.PAGE :]]
    assert got["whole"] == [e.seq for e in events]
    half = len(events) // 2
    assert [r["seq"] for r in got["middle"]["rows"]] == [e.seq for e in events[half : half + 40]]
    assert [r["seq"] for r in got["end"]["rows"]] == [e.seq for e in events[-10:]]
    updates = [e for e in events if e.type == "state_update"]
    assert got["updates"]["total"] == len(updates)
    assert [r["seq"] for r in got["updates"]["rows"]] == [e.seq for e in updates[1000:1025]]
    assert all(r["summary"].startswith("n=") for r in got["updates"]["rows"])


def test_a_malformed_rows_request_is_ignored(store: SqliteCheckpointer) -> None:
    run = ticker_workflow(store, 5).start({"n": 0}).run()
    fe = Frontend(run)
    try:
        fe.click("rows", view="v1", filter="", start="0", count=10, req=1)
        fe.click("rows", view="v1", filter=None, start=0, count=10, req=2)
        fe.click("rows", view="v1", filter="", start=0, count=10, req=3)

        async def main() -> None:
            await until(lambda: fe.customs("rows"), what="the good request's answer")

        run_async(main)
        assert [m["req"] for m in fe.customs("rows")] == [3]
    finally:
        fe.close()


def test_the_history_slider_shows_the_overlay_a_full_replay_gives_at_any_step(
    store: SqliteCheckpointer, small_bounds: None
) -> None:
    run = ticker_workflow(store, STEPS).start({"n": 0}).run()
    events = run.events
    fe = Frontend(run)
    steps = [0, 1, 499, 500, 501, 1234, 2999, 3000, *random.Random(7).sample(range(STEPS), 5)]
    try:
        for step in steps:
            fe.click("history", view="v1", step=step)

            async def main(step: int = step) -> None:
                await until(
                    lambda: any(m["step"] == step for m in fe.customs("history", "v1")),
                    what=f"step {step}",
                )

            run_async(main)
    finally:
        fe.close()
    answers = {m["step"]: m for m in fe.customs("history", "v1")}
    for step in steps:
        expected = overlay_payload(overlay_from_events(events_until(events, step), run.workflow))
        assert answers[step]["overlay"] == expected, step
        assert answers[step]["state"] == run.history()[step].state
        assert answers[step]["changed"] == ([] if step == 0 else ["n"])


def test_a_fold_fed_in_batches_and_copied_on_the_way_matches_one_replay() -> None:
    run = ticker_workflow(MemoryCheckpointer(), 50).start({"n": 0}).run()
    events = run.events
    fold = OverlayFold(run.workflow)
    copies = []
    for i in range(0, len(events), 7):
        fold.feed(events[i : i + 7])
        copies.append((i + 7, fold.copy()))
    assert fold.overlay() == overlay_from_events(events, run.workflow)
    for upto, twin in copies:  # a copy never moves on with the fold it came from
        assert twin.overlay() == overlay_from_events(events[:upto], run.workflow)


@pytest.mark.slow
def test_what_a_view_keeps_grows_by_bookmarks_not_by_the_events_past_its_window(
    small_bounds: None,
) -> None:
    import gc
    import tracemalloc

    def traced(make: Any) -> tuple[int, Any]:
        gc.collect()
        tracemalloc.start()
        try:
            made = make()
            gc.collect()
            return tracemalloc.get_traced_memory()[0], made
        finally:
            tracemalloc.stop()

    runs = {
        n: ticker_workflow(MemoryCheckpointer(), n).start({"n": 0}).run() for n in (1_000, 8_000)
    }
    kept = {}
    for steps, run in runs.items():
        kept[steps], fe = traced(lambda run=run: Frontend(run))
        fe.close()
    extra = runs[8_000].events[len(runs[1_000].events) :]
    # What holding those extra events would cost, measured the same way.
    held, _ = traced(lambda: [dataclasses.replace(e) for e in extra])
    # 2,000 events already overflow the 300-event window: 14,000 more cost the view a
    # bookmark per 64 rows and a fold per 500 events, a few percent of holding them.
    assert kept[8_000] - kept[1_000] < 0.05 * held, (kept, held)
