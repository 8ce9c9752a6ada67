"""The run timeline: rows, attempts, marks, approval waits, axis, escaping, determinism."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import re
import xml.etree.ElementTree as ET
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import Event, MemoryCheckpointer, StateGraph
from agentnb.errors import NodeFailed
from agentnb.render.timeline import Timeline, bars_from_events, timeline, timeline_svg
from agentnb.resilience import Retry

SVG = "{http://www.w3.org/2000/svg}"
TICK = re.compile(r"^(0|\d+(\.\d+)? (µs|ms|s)|(\d+:)?\d+:\d\d(\.\d+)?)$")


class Log:
    """Builds a run's event log with chosen times."""

    def __init__(self, graph: str = "refund", run_id: str = "r1") -> None:
        self.run_id = run_id
        self.events: list[Event] = []
        self.step = 0
        self.add("run_started", "plan", 0.0, graph=graph, state={}, max_steps=25)

    def add(self, type: str, node: str | None, at: float, **payload: Any) -> Log:
        seq = len(self.events) + 1
        self.events.append(Event(self.run_id, seq, self.step, type, node, payload, 1e9 + at))
        return self

    def node(self, name: str, start: float, end: float, *, next: str = "END") -> Log:
        self.add("node_start", name, start)
        self.step += 1
        return self.add("state_update", name, end, delta={}, next=next)


def error(kind: str = "ConnectionError", message: str = "down") -> dict[str, str]:
    return {"type": kind, "message": message}


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def find(root: ET.Element, tag: str, *wanted: str) -> list[ET.Element]:
    """Elements ``tag`` whose class holds every one of ``wanted``."""
    return [e for e in root.iter(SVG + tag) if set(wanted) <= classes(e)]


def approved_and_retried() -> Log:
    """plan; an hour waiting for approval; pay: error, timeout, then ok; completed."""
    log = Log().node("plan", 0.010, 0.012, next="pay")
    log.add("interrupted", "pay", 0.012, when="before", digest="d", state={})
    log.add("approved", "pay", 3600.0, by="ada", comment="fine", digest="d")
    log.add("node_start", "pay", 3600.001)
    log.add("retry", "pay", 3600.003, attempt=1, error=error(), wait=0.001)
    log.add("timeout", "pay", 3600.006, seconds=0.002)
    log.add("retry", "pay", 3600.0061, attempt=2, error=error("NodeTimeout"), wait=0.002)
    log.add("effect", "pay", 3600.009, name="charge", key="k")
    log.step += 1
    log.add("state_update", "pay", 3600.010, delta={}, next="END")
    return log.add("completed", "END", 3600.010, state={})


def test_one_row_per_node_execution_and_one_per_approval_wait() -> None:
    root = parse(timeline_svg(approved_and_retried().events))
    assert len(find(root, "g", "row", "node")) == 2
    assert [classes(g) for g in find(root, "g", "row")] == [
        {"row", "node", "ok"},
        {"row", "approval", "approved"},
        {"row", "node", "ok"},
    ]
    wait = find(root, "g", "row", "approval")[0]
    assert len(find(wait, "rect", "wait")) == 1
    assert len(find(wait, "circle", "decision", "approved")) == 1
    assert "approved by ada: fine" in (wait.findtext(SVG + "title") or "")


def test_each_attempt_is_its_own_segment_with_retry_and_timeout_marks() -> None:
    root = parse(timeline_svg(approved_and_retried().events))
    pay = find(root, "g", "row", "node")[1]
    attempts = find(pay, "rect", "attempt")
    assert [classes(a) - {"attempt"} for a in attempts] == [{"error"}, {"timeout"}, {"ok"}]
    spans = [(float(a.get("x", 0)), float(a.get("width", 0))) for a in attempts]
    assert all(width >= 2 for _, width in spans)
    assert all(x + w < next_x for (x, w), (next_x, _) in itertools.pairwise(spans))
    assert len(find(pay, "rect", "backoff")) == 2
    assert len(find(pay, "path", "mark", "retry")) == 2
    assert len(find(pay, "path", "mark", "timeout")) == 1
    assert len(find(pay, "path", "mark", "effect")) == 1
    assert "3 attempts" in (pay.findtext(SVG + "title") or "")


def test_a_long_idle_gap_is_drawn_as_a_labelled_break_so_executions_stay_visible() -> None:
    root = parse(timeline_svg(approved_and_retried().events, width=720))
    breaks = find(root, "rect", "break")
    assert len(breaks) == 1
    assert "1 h 0 min idle" in (breaks[0].findtext(SVG + "title") or "")
    assert [t.text for t in find(root, "text", "break-label")] == ["≈1 h 0 min"]
    plan = find(find(root, "g", "row", "node")[0], "rect", "span")[0]
    assert float(plan.get("width", 0)) > 5  # 2 ms of 1 hour, still wider than a hairline


def test_without_idle_gaps_the_axis_is_linear_with_round_readable_ticks() -> None:
    log = Log()
    for i in range(5):
        log.node(f"n{i}", 0.020 * i, 0.020 * i + 0.015, next=f"n{i + 1}")
    root = parse(timeline_svg(log.events))
    assert find(root, "rect", "break") == []
    labels = [t.text or "" for t in find(root, "text", "tick-label")]
    assert len(labels) >= 3
    assert all(TICK.match(label) for label in labels), labels
    assert labels[:3] == ["0", "20 ms", "40 ms"]
    xs = [float(t.get("x", 0)) for t in find(root, "text", "tick-label")]
    assert xs == sorted(xs)
    assert all(b - a >= 40 for a, b in itertools.pairwise(xs))


def test_outcomes_failed_by_timeout_refused_by_breaker_cancelled_and_running() -> None:
    log = Log().add("node_start", "slow", 0.01).add("timeout", "slow", 0.02, seconds=0.01)
    log.add("failed", "slow", 0.021, error=error("NodeTimeout"), raised=error("NodeFailed"))
    log.add("node_start", "pay", 0.03).add("breaker_open", "pay", 0.03, breaker="p", retry_in=9)
    log.add("failed", "pay", 0.03, error=error("BreakerOpen"))
    log.add("node_start", "a", 0.04).add("cancelled", "a", 0.05, reason="CancelledError")
    log.add("node_start", "b", 0.06).add("note", "b", 0.07, text="custom")
    bars = bars_from_events(log.events)
    assert [(b.node, b.outcome) for b in bars] == [
        ("slow", "timeout"),
        ("pay", "breaker"),
        ("a", "cancelled"),
        ("b", "running"),
    ]
    assert "NodeTimeout" in bars[0].detail
    root = parse(timeline_svg(log.events))
    assert len(find(root, "path", "mark", "breaker")) == 1
    assert len(find(root, "path", "mark", "event")) == 1  # the custom "note" event


def test_a_pending_approval_is_an_open_ended_dashed_bar() -> None:
    log = Log().node("plan", 0.01, 0.02, next="pay")
    log.add("interrupted", "pay", 0.02, when="before", digest="d", state={})
    root = parse(timeline_svg(log.events))
    wait = find(root, "g", "row", "approval", "pending")
    assert len(wait) == 1
    assert find(wait[0], "rect", "wait")[0].get("stroke-dasharray")
    assert find(wait[0], "circle", "decision") == []
    assert "pending" in (find(root, "text", "title")[0].text or "")


HOSTILE = [
    "<script>alert(1)</script>",
    '" onmouseover="alert(1)',
    "a & b <![CDATA[ x ]]>",
    "bell\x07 nul\x00 rtl\u202e",
]


def test_hostile_names_comments_and_messages_are_text_never_markup() -> None:
    log = Log(graph=HOSTILE[0] + HOSTILE[1])
    for i, name in enumerate(HOSTILE):
        log.node(name, 0.01 * i, 0.01 * i + 0.005)
    log.add("interrupted", HOSTILE[1], 0.05, when="before", digest="d", state={})
    log.add("rejected", HOSTILE[1], 0.06, by=HOSTILE[2], comment="<img src=x onerror=alert(1)>")
    svg = timeline_svg(log.events)
    root = parse(svg)  # well-formed XML despite NULs and quotes
    for element in root.iter():
        assert element.tag.removeprefix(SVG) not in {"script", "foreignObject", "a", "image"}
        assert not [a for a in element.attrib if a.lower().startswith("on")]
    assert "<script" not in svg
    assert "<img" not in svg
    titles = [g.findtext(SVG + "title") or "" for g in find(root, "g", "row")]
    assert titles[0].startswith("<script>alert(1)</script> (step 0)")
    assert titles[1].startswith('" onmouseover="alert(1) (step 1)')
    assert titles[3].startswith("bell\\u0007 nul\\u0000 rtl\\u202e (step 3)")
    assert "rejected by a & b <![CDATA[ x ]]>: <img src=x onerror=alert(1)>" in titles[4]
    assert (find(root, "text", "title")[0].text or "").startswith("<script>alert(1)</script>")
    assert root.get("aria-label", "").startswith(f"timeline of {HOSTILE[0]}{HOSTILE[1]}")


def test_the_same_events_in_any_order_draw_the_same_svg() -> None:
    events = approved_and_retried().events
    shuffled = events[:]
    random.Random(7).shuffle(shuffled)
    assert timeline_svg(events) == timeline_svg(shuffled) == timeline_svg(tuple(events))
    assert bars_from_events(shuffled) == bars_from_events(events)
    assert timeline_svg(events, width=500) != timeline_svg(events)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=30),
            st.integers(min_value=0, max_value=3),
            st.floats(min_value=1e-6, max_value=5000, allow_nan=False),
        ),
        max_size=8,
    )
)
def test_any_names_and_durations_give_well_formed_svg_with_every_attempt(
    runs: list[tuple[str, int, float]],
) -> None:
    log, now = Log(), 0.0
    for name, retries, took in runs:
        log.add("node_start", name, now)
        for attempt in range(retries):
            now += took
            log.add("retry", name, now, attempt=attempt + 1, error=error(), wait=took / 10)
        now += took
        log.step += 1
        log.add("state_update", name, now, delta={}, next="END")
    svg = timeline_svg(log.events, width=400)
    root = parse(svg)
    rows = find(root, "g", "row", "node")
    assert len(rows) == len(runs)
    for row, (_, retries, _) in zip(rows, runs, strict=True):
        attempts = [
            (float(a.get("x", 0)), float(a.get("width", 0))) for a in find(row, "rect", "attempt")
        ]
        assert len(attempts) == retries + 1
        assert all(w >= 2 for _, w in attempts)  # every attempt visible, none hiding another
        assert all(x + w < next_x for (x, w), (next_x, _) in itertools.pairwise(attempts))
        assert len(find(row, "path", "mark", "retry")) == retries
    assert svg == timeline_svg(list(reversed(log.events)), width=400)


def test_an_empty_log_still_draws() -> None:
    root = parse(timeline_svg([]))
    assert find(root, "text", "title")[0].text == "no events"
    assert find(root, "g", "row") == []


def test_timeline_of_a_real_run_with_approval_retries_and_a_timeout() -> None:
    failures = iter([ConnectionError("down")])

    def flaky(state: dict[str, Any]) -> dict[str, Any]:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return {"paid": True}

    async def stuck(state: dict[str, Any]) -> None:
        await asyncio.Event().wait()  # never set: only the timeout ends it

    g = StateGraph("pay")
    g.add_node("flaky", flaky, retry=Retry(attempts=2, initial=0.001, jitter=0))
    g.add_node("stuck", stuck, timeout=0.01)
    g.set_entry_point("flaky")
    g.add_edge("flaky", "stuck")
    g.add_interrupt_before("flaky")
    run = g.compile(MemoryCheckpointer()).start({})
    run.run()
    run.approve(by="ada")
    with contextlib.suppress(NodeFailed):
        run.run()
    drawn = timeline(run)
    assert isinstance(drawn, Timeline)
    assert [(b.kind, b.node, b.outcome, b.attempts) for b in drawn.bars] == [
        ("approval", "flaky", "approved", 0),
        ("node", "flaky", "ok", 2),
        ("node", "stuck", "timeout", 1),
    ]
    bundle = drawn._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "image/svg+xml"}
    assert bundle["image/svg+xml"] == drawn.svg() == drawn._repr_svg_()
    assert drawn._repr_mimebundle_(include={"text/plain"}) == {"text/plain": bundle["text/plain"]}
    assert "image/svg+xml" not in drawn._repr_mimebundle_(exclude={"image/svg+xml"})
    text = bundle["text/plain"]
    assert text.startswith(f"run {run.run_id[:12]} of 'pay': failed")
    assert "approved by ada" in text
    assert "2 attempts" in text
    assert "1 timeout" in text
    assert repr(drawn) == f"<Timeline: 3 rows of {len(run.events)} events>"


def test_a_run_draws_its_own_timeline() -> None:
    from agentnb.examples import build_refund_workflow

    run = build_refund_workflow().start({"requested": 10})
    run.run()
    drawn = run.timeline()
    assert "<svg" in drawn.svg()
    assert [bar.node for bar in drawn.bars] == ["planner", "refund"]
