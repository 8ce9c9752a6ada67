"""Log rows, summaries and per-step overlays (pure), and the relay's coalescing."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentnb import MemoryCheckpointer
from agentnb.examples import build_refund_workflow
from agentnb.store.records import Event
from agentnb.widgets._events import (
    SUMMARY_LIMIT,
    decided_payload,
    event_row,
    events_until,
    overlay_at,
    pending_payload,
    summarize,
)
from agentnb.widgets._relay import Relay

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
types = st.sampled_from(
    ["state_update", "interrupted", "approved", "rejected", "failed", "run_started", "retry",
     "completed", "node_start", "effect", "cancelled", "custom-thing"]
)  # fmt: skip


@given(types, st.dictionaries(st.text(), json_values, max_size=5), st.text() | st.none())
def test_every_event_summarizes_to_one_bounded_line(
    kind: str, payload: dict[str, Any], node: str | None
) -> None:
    row = event_row(Event("r", 1, 0, kind, node, payload, 0.0))
    assert len(row["summary"]) <= SUMMARY_LIMIT
    assert row["node"] == node
    assert row["type"] == kind


def test_state_update_summary_names_changed_keys_and_next_node() -> None:
    e = Event("r", 2, 1, "state_update", "plan", {"delta": {"a": 1, "m": [1, 2]}, "next": "x"}, 0)
    assert summarize(e) == "a=1, m=+2 item(s) → x"


def test_decision_summary_keeps_the_comment_as_text() -> None:
    payload = {"by": "<b>ada</b>", "comment": "<script>x</script>", "digest": "d"}
    e = Event("r", 5, 1, "approved", "pay", payload, 0)
    assert summarize(e) == "by <b>ada</b>: <script>x</script>"


def finished_refund() -> tuple[Any, list[Event]]:
    wf = build_refund_workflow(MemoryCheckpointer(), [])
    run = wf.start({"requested": 900})
    run.run()
    run.approve(by="ada", comment="fine")
    run.run()
    return wf, run.events


def test_overlay_at_a_past_step_shows_only_what_had_happened() -> None:
    wf, events = finished_refund()
    at1 = overlay_at(events, wf, 1)
    assert at1["visited"] == ["planner"]
    assert at1["status"] == "pending"
    assert at1["pending"] == "human_approval"
    at3 = overlay_at(events, wf, 3)
    assert at3["status"] == "completed"
    assert at3["visited"] == ["planner", "human_approval", "refund"]


def test_events_until_keeps_the_interrupt_but_not_the_next_node_start() -> None:
    _, events = finished_refund()
    kept = events_until(events, 1)
    assert [e.type for e in kept] == ["run_started", "node_start", "state_update", "interrupted"]


def test_pending_and_decided_payloads_describe_the_latest_pause() -> None:
    _, events = finished_refund()
    paused = events_until(events, 1)
    pending = pending_payload(paused, None)
    assert pending["node"] == "human_approval"
    assert pending["state"]["amount"] == 900
    assert pending["digest"] == paused[-1].payload["digest"]
    assert decided_payload(paused) == {}
    decided = decided_payload(events)
    assert (decided["decision"], decided["by"], decided["comment"]) == ("approved", "ada", "fine")


def test_relay_turns_a_burst_of_wakes_into_few_refreshes() -> None:
    refreshed = threading.Event()
    calls: list[float] = []

    def refresh() -> None:
        calls.append(time.monotonic())
        refreshed.set()

    relay = Relay(refresh, lambda exc: None, min_interval=0.1)
    relay.start()
    try:
        started = time.monotonic()
        while time.monotonic() - started < 0.5:
            relay.wake()  # thousands of events committed during half a second
        assert refreshed.wait(5)
        gaps = [b - a for a, b in itertools.pairwise(calls)]
        assert len(calls) <= 7
        assert all(gap >= 0.099 for gap in gaps)
    finally:
        relay.stop()
    assert not relay.running


def test_relay_reports_a_failing_refresh_and_keeps_going() -> None:
    errors: list[BaseException] = []
    done = threading.Event()
    attempts = []

    def refresh() -> None:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("store closed")
        done.set()

    relay = Relay(refresh, errors.append, min_interval=0.0)
    relay.start()
    try:
        relay.wake()
        deadline = time.monotonic() + 5
        while not errors and time.monotonic() < deadline:
            relay.wake()
            done.wait(0.01)
        relay.wake()
        assert done.wait(5)
    finally:
        relay.stop()
    assert [str(e) for e in errors] == ["store closed"]
