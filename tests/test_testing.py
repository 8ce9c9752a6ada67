"""``agentnb.testing.capture_events``: what runs, machines and breakers announce, for tests."""

from __future__ import annotations

import doctest
import threading

import pytest

import agentnb.testing
from agentnb import CircuitBreaker, Status, TransitionNotAllowed
from agentnb.examples import build_refund_workflow
from agentnb.testing import CapturedEvents, capture_events
from tests.fsm.fsm_support import traffic_light


def test_capture_events_of_a_workflow_records_every_runs_events_in_order() -> None:
    workflow = build_refund_workflow()
    with capture_events(workflow) as captured:
        small = workflow.start({"requested": 5}).run()
        large = workflow.start({"requested": 1000}).run()
    assert captured.events == small.events + large.events
    assert captured.types(large.run_id) == [
        "run_started",
        "node_start",
        "state_update",
        "interrupted",
    ]
    assert [e.node for e in captured.of_type("node_start")] == [
        "planner",
        "refund",
        "planner",
    ]


def test_capture_events_stops_listening_when_the_block_ends_even_if_it_raises() -> None:
    workflow = build_refund_workflow()
    captured: list[CapturedEvents] = []

    def fail_inside() -> None:
        with capture_events(workflow) as events:
            captured.append(events)
            workflow.start({"requested": 5}).run()
            raise KeyError("the test's own bug")

    with pytest.raises(KeyError):
        fail_inside()
    seen = len(captured[0])
    workflow.start({"requested": 5}).run()
    assert seen > 0
    assert len(captured[0]) == seen
    assert not workflow.listeners


def test_capture_events_of_one_run_ignores_the_others() -> None:
    workflow = build_refund_workflow()
    run = workflow.start({"requested": 1000})
    with capture_events(run) as captured:
        workflow.start({"requested": 5}).run()
        run.run()
        run.approve(by="ada")
    assert {e.run_id for e in captured.events} == {run.run_id}
    assert captured.types()[-1] == "approved"


def test_capture_events_of_an_instance_records_its_transitions_and_refusals_only() -> None:
    lights = traffic_light()
    light, other = lights.start(), lights.start()
    with capture_events(light) as captured:
        light.send("timer")
        other.send("timer")
        with pytest.raises(TransitionNotAllowed):
            light.send("walk")
    assert [(t.source, t.target) for t in captured.transitions] == [("RED", "GREEN")]
    assert [(r.event, r.state) for r in captured.refusals] == [("walk", "GREEN")]


def test_capture_events_of_a_machine_records_every_instances_transitions() -> None:
    lights = traffic_light()
    with capture_events(lights) as captured:
        lights.start("a").send("timer")
        lights.start("b").send("timer")
    assert [t.instance_id for t in captured.transitions] == ["a", "b"]


def test_capture_events_of_a_statechart_instance_records_its_steps_and_refusals() -> None:
    from agentnb import State, Statechart

    switch = Statechart("switch", [State("off", on={"flip": "on"}), State("on")]).start(strict=True)
    with capture_events(switch) as captured:
        switch.send("flip")
        with pytest.raises(TransitionNotAllowed):
            switch.send("flip")
    assert [t.event for t in captured.transitions] == ["flip"]
    assert [r.event for r in captured.refusals] == ["flip"]


def test_capture_events_of_a_breaker_records_its_moves() -> None:
    breaker = CircuitBreaker("payments", failures=1)
    with capture_events(breaker) as captured:
        breaker.failure()
        breaker.reset()
    assert captured.breaker_changes == [
        ("payments", "closed", "open"),
        ("payments", "open", "closed"),
    ]


def test_wait_for_returns_the_event_a_run_in_another_thread_saves() -> None:
    workflow = build_refund_workflow()
    run = workflow.start({"requested": 1000})
    with capture_events(workflow) as captured:
        worker = threading.Thread(target=run.run)
        worker.start()
        paused = captured.wait_for("interrupted", run_id=run.run_id, timeout=30)
        worker.join(timeout=30)
    assert paused.node == "human_approval"
    assert run.status == Status.PENDING


def test_wait_for_gives_up_at_its_deadline_and_says_what_came() -> None:
    workflow = build_refund_workflow()
    with capture_events(workflow) as captured:
        workflow.start({"requested": 5}).run()
        with pytest.raises(TimeoutError, match=r"no 'interrupted' event within 0.05 s.*completed"):
            captured.wait_for("interrupted", timeout=0.05)


def test_capture_events_refuses_what_it_cannot_listen_to() -> None:
    with pytest.raises(TypeError, match="not str 'refund'"), capture_events("refund"):  # type: ignore[arg-type]
        pass
    with pytest.raises(TypeError, match="at least one"), capture_events():
        pass


def test_the_documented_examples_run() -> None:
    result = doctest.testmod(agentnb.testing, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1
    assert result.failed == 0
