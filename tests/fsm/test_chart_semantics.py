"""Statechart semantics, rule by rule (W3C SCXML interpretation), through the Python API."""

from __future__ import annotations

from typing import Any

import pytest

from agentnb import DefinitionError, Final, History, ManualClock, Parallel, State, Statechart
from agentnb.errors import TransitionNotAllowed
from agentnb.fsm import Assign, Cancel, Raise, Send, StateMachine


def log_to(name: str) -> Any:
    def action(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        return {"log": [*context.get("log", []), name]}

    action.__name__ = f"log_{name}"
    return action


def traced(sid: str, **kwargs: Any) -> State:
    """A state whose entry and exit append to context['log']."""
    return State(sid, on_enter=log_to(f"enter {sid}"), on_exit=log_to(f"exit {sid}"), **kwargs)


def test_a_compound_state_enters_its_initial_child_and_both_are_active() -> None:
    chart = Statechart(
        "c", [State("on", initial="b", states=[State("a"), State("b")]), State("off")]
    )
    instance = chart.start()
    assert instance.configuration == {"on", "b"}
    assert instance.in_state("on")
    assert instance.in_state("b")
    assert not instance.in_state("a")
    assert instance.state == "b"


def test_without_initial_the_first_child_in_document_order_is_entered() -> None:
    instance = Statechart("c", [State("p", states=[State("x"), State("y")])]).start()
    assert instance.configuration == {"p", "x"}


def test_a_parallel_state_activates_every_region() -> None:
    chart = Statechart(
        "p",
        [
            Parallel(
                "player",
                states=[
                    State("audio", states=[State("muted"), State("loud")]),
                    State("video", states=[State("sd"), State("hd", on={"lower": "sd"})]),
                ],
            )
        ],
    )
    instance = chart.start()
    assert instance.configuration == {"player", "audio", "muted", "video", "sd"}


def test_entering_a_final_child_raises_done_state_with_its_donedata() -> None:
    chart = Statechart(
        "d",
        [
            State(
                "job",
                states=[State("work", on={"finish": "ok"}), Final("ok", donedata={"code": 7})],
                on={"done.state.job": {"target": "report", "action": lambda c, p: {"got": p}}},
            ),
            State("report"),
        ],
    )
    instance = chart.start()
    instance.send("finish")
    assert instance.configuration == {"report"}
    assert instance.context["got"] == {"code": 7}


def test_a_parallel_state_is_done_when_every_region_is_in_a_final_state() -> None:
    chart = Statechart(
        "pd",
        [
            Parallel(
                "both",
                states=[
                    State("a", states=[State("a1", on={"x": "a2"}), Final("a2")]),
                    State("b", states=[State("b1", on={"y": "b2"}), Final("b2")]),
                ],
                on={"done.state.both": "after"},
            ),
            State("after"),
        ],
    )
    instance = chart.start()
    instance.send("x")
    assert "both" in instance.configuration  # one region done is not enough
    instance.send("y")
    assert instance.configuration == {"after"}


def test_a_top_level_final_state_ends_the_instance() -> None:
    instance = Statechart("f", [State("a", on={"stop": "end"}), Final("end")]).start()
    instance.send("stop")
    assert instance.is_final
    assert instance.send("stop").ignored  # nothing runs after the end


def test_shallow_history_restores_the_last_active_child() -> None:
    chart = Statechart(
        "h",
        [
            State(
                "on",
                states=[
                    State("a", on={"next": "b"}),
                    State("b", states=[State("b1", on={"deeper": "b2"}), State("b2")]),
                    History("h"),
                ],
                on={"off": "off"},
            ),
            State("off", on={"on": "h"}),
        ],
    )
    instance = chart.start()
    instance.send("next")
    instance.send("deeper")
    instance.send("off")
    instance.send("on")
    assert instance.configuration == {"on", "b", "b1"}  # shallow: b again, b's own initial


def test_deep_history_restores_the_last_active_leaves() -> None:
    chart = Statechart(
        "h",
        [
            State(
                "on",
                states=[
                    State("a", on={"next": "b"}),
                    State("b", states=[State("b1", on={"deeper": "b2"}), State("b2")]),
                    History("h", deep=True),
                ],
                on={"off": "off"},
            ),
            State("off", on={"on": "h"}),
        ],
    )
    instance = chart.start()
    instance.send("next")
    instance.send("deeper")
    instance.send("off")
    instance.send("on")
    assert instance.configuration == {"on", "b", "b2"}


def test_history_without_a_record_takes_its_default() -> None:
    chart = Statechart(
        "h",
        [
            State("off", on={"on": "h"}),
            State("on", states=[State("a"), State("b"), History("h", default="b")]),
        ],
    )
    instance = chart.start()
    instance.send("on")
    assert instance.configuration == {"on", "b"}


def test_a_transition_of_an_ancestor_applies_to_its_descendants() -> None:
    chart = Statechart(
        "inherit",
        [State("on", states=[State("a"), State("b")], on={"power": "off"}), State("off")],
    )
    instance = chart.start()
    instance.send("power")
    assert instance.configuration == {"off"}


def test_the_descendants_transition_wins_over_the_ancestors() -> None:
    chart = Statechart(
        "inherit",
        [
            State("on", states=[State("a", on={"go": "b"}), State("b")], on={"go": "off"}),
            State("off"),
        ],
    )
    instance = chart.start()
    instance.send("go")
    assert instance.configuration == {"on", "b"}


def test_document_order_breaks_ties_between_transitions_of_one_state() -> None:
    chart = Statechart("tie", [State("a", on={"go": ["b", "c"]}), State("b"), State("c")])
    instance = chart.start()
    instance.send("go")
    assert instance.configuration == {"b"}


def test_a_guard_that_fails_lets_the_next_transition_in_document_order_run() -> None:
    chart = Statechart(
        "guards",
        [
            State("a", on={"go": [{"target": "b", "guard": "n > 1"}, "c"]}),
            State("b"),
            State("c"),
        ],
        datamodel={"n": 0},
    )
    instance = chart.start()
    instance.send("go")
    assert instance.configuration == {"c"}


def test_in_parallel_regions_a_conflicting_transition_is_preempted_by_an_earlier_one() -> None:
    chart = Statechart(
        "conflict",
        [
            Parallel(
                "p",
                states=[
                    State("r1", states=[State("x", on={"e": "out"})]),
                    State("r2", states=[State("y", on={"e": "out2"})]),
                ],
            ),
            State("out"),
            State("out2"),
        ],
    )
    instance = chart.start()
    instance.send("e")
    assert instance.configuration == {"out"}
    [step] = instance.microsteps
    assert step.taken == ["<x --e--> out>"]
    assert step.preempted == ["<y --e--> out2>"]


def test_in_parallel_regions_transitions_that_do_not_conflict_all_run() -> None:
    chart = Statechart(
        "both",
        [
            Parallel(
                "p",
                states=[
                    State("r1", states=[State("x1", on={"e": "x2"}), State("x2")]),
                    State("r2", states=[State("y1", on={"e": "y2"}), State("y2")]),
                ],
            )
        ],
    )
    instance = chart.start()
    instance.send("e")
    assert instance.configuration == {"p", "r1", "x2", "r2", "y2"}


def test_an_external_self_transition_exits_and_reenters_an_internal_one_does_not() -> None:
    def chart(internal: bool) -> Statechart:
        return Statechart(
            "self",
            [
                traced(
                    "s",
                    states=[traced("a", on={"next": "b"}), traced("b")],
                    on={"go": {"target": "b", "internal": internal}},
                )
            ],
            datamodel={"log": []},
        )

    external = chart(False).start()
    external.send("go")
    assert external.context["log"][-4:] == ["exit a", "exit s", "enter s", "enter b"]
    internal = chart(True).start()
    internal.send("go")
    assert internal.context["log"][-2:] == ["exit a", "enter b"]


def test_a_targetless_transition_runs_its_action_and_exits_nothing() -> None:
    chart = Statechart(
        "count",
        [traced("s", on={"tick": {"action": lambda c, p: {"n": c["n"] + 1}}})],
        datamodel={"n": 0, "log": []},
    )
    instance = chart.start()
    instance.send("tick")
    instance.send("tick")
    assert instance.context["n"] == 2
    assert instance.context["log"] == ["enter s"]


def test_an_eventless_transition_fires_as_soon_as_its_guard_holds() -> None:
    chart = Statechart(
        "always",
        [
            State(
                "filling",
                on={"pour": {"action": lambda c, p: {"level": c["level"] + p}}},
                always={"target": "full", "guard": "level >= 10"},
            ),
            State("full"),
        ],
        datamodel={"level": 0},
    )
    instance = chart.start()
    instance.send("pour", 6)
    assert instance.configuration == {"filling"}
    instance.send("pour", 6)
    assert instance.configuration == {"full"}


@pytest.mark.parametrize(
    ("descriptor", "event", "matches"),
    [
        ("error", "error.execution", True),
        ("error.*", "error.execution", True),
        ("error.", "error.execution", True),
        ("error", "errors", False),
        ("*", "anything.at.all", True),
        ("a.b", "a", False),
        ("a b", "b.c", True),
    ],
)
def test_event_descriptors_match_by_token_prefix(
    descriptor: str, event: str, matches: bool
) -> None:
    chart = Statechart("d", [State("s", on={descriptor: "t"}), State("t")])
    instance = chart.start()
    instance.send(event)
    assert instance.in_state("t") is matches


def test_internal_events_run_before_the_next_external_one_in_the_order_raised() -> None:
    chart = Statechart(
        "queue",
        [
            State(
                "a",
                on_enter=[Raise("first"), Raise("second")],
                on={"first": "b", "*": "fail"},
            ),
            State("b", on={"second": "c", "*": "fail"}),
            State("c"),
            State("fail"),
        ],
    )
    instance = chart.start()
    assert instance.configuration == {"c"}  # the macrostep ran both internal events


def test_a_send_without_delay_is_an_external_event_after_the_internal_ones() -> None:
    chart = Statechart(
        "order",
        [
            State("a", on_enter=[Send("ext"), Raise("int")], on={"int": "b", "ext": "fail"}),
            State("b", on={"ext": "c"}),
            State("c"),
            State("fail"),
        ],
    )
    assert chart.start().configuration == {"c"}


def test_a_delayed_event_fires_when_due_and_a_cancelled_one_never() -> None:
    clock = ManualClock(100.0)
    chart = Statechart(
        "oven",
        [
            State("idle", on={"start": "heating"}),
            State(
                "heating",
                on_enter=[Send("done", delay="30s", id="cook")],
                on_exit=[Cancel("cook")],
                on={"done": "ready", "door": "idle"},
            ),
            State("ready"),
        ],
    )
    instance = chart.start(clock=clock)
    instance.send("start")
    [timer] = instance.timers()
    assert (timer.event, timer.fire_at, timer.sendid) == ("done", 130.0, "cook")
    clock.advance(29)
    assert instance.run_due() == []
    instance.send("door")  # exits heating: the timer is cancelled
    assert instance.timers() == []
    instance.send("start")
    clock.advance(30)
    [record] = instance.run_due()
    assert record.event == "done"
    assert instance.configuration == {"ready"}


def test_after_is_a_delayed_transition_cancelled_when_the_state_is_left() -> None:
    clock = ManualClock()
    chart = Statechart(
        "light",
        [State("on", after={5: "off"}, on={"stay": "on2"}), State("on2"), State("off")],
    )
    instance = chart.start(clock=clock)
    assert [t.fire_at for t in instance.timers()] == [5.0]
    instance.send("stay")
    assert instance.timers() == []
    clock.advance(10)
    assert instance.run_due() == []
    assert instance.configuration == {"on2"}


def test_in_checks_the_configuration_inside_a_guard() -> None:
    chart = Statechart(
        "in",
        [
            Parallel(
                "p",
                states=[
                    State("mode", states=[State("idle", on={"arm": "armed"}), State("armed")]),
                    State(
                        "door",
                        states=[
                            State("shut", on={"open": {"target": "alarm", "guard": "In('armed')"}}),
                            State("alarm"),
                        ],
                    ),
                ],
            )
        ],
    )
    instance = chart.start()
    instance.send("open")
    assert not instance.in_state("alarm")
    instance.send("arm")
    instance.send("open")
    assert instance.in_state("alarm")


def test_an_expression_that_fails_raises_error_execution() -> None:
    chart = Statechart(
        "err",
        [
            State("a", on_enter=[Assign("x", "missing + 1")], on={"error.execution": "broken"}),
            State("broken"),
        ],
        datamodel={"x": 0},
    )
    assert chart.start().configuration == {"broken"}


def test_a_strict_instance_refuses_an_event_that_enables_nothing() -> None:
    chart = Statechart("s", [State("a", on={"go": "b"}), State("b")])
    strict = chart.start(strict=True)
    with pytest.raises(TransitionNotAllowed, match="'nope'"):
        strict.send("nope")
    assert strict.history == []
    lenient = chart.start()
    assert lenient.send("nope").ignored


def test_a_missing_target_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="'nowhere'"):
        Statechart("bad", [State("a", on={"go": "nowhere"})])


def test_a_repeated_id_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="used twice"):
        Statechart("bad", [State("a", states=[State("a")])])


def test_a_repeated_event_id_returns_the_first_record_and_runs_nothing_again() -> None:
    chart = Statechart(
        "n",
        [State("s", on={"tick": {"action": lambda c, p: {"n": c["n"] + 1}}})],
        datamodel={"n": 0},
    )
    instance = chart.start()
    first = instance.send("tick", event_id="e1")
    again = instance.send("tick", event_id="e1")
    assert first == again
    assert instance.context["n"] == 1


def test_a_flat_machine_has_the_same_configuration_api() -> None:
    door = StateMachine("door", ["closed", "open"], initial="closed")
    door.add_transition("closed", "push", "open")
    door.add_transition("open", "pull", "closed")
    instance = door.start()
    instance.send("push")
    assert instance.configuration == {"open"}
    assert instance.in_state("open")
    assert not instance.in_state("closed")
    assert instance.timers() == []
    assert instance.run_due() == []


@pytest.mark.slow
def test_an_endless_eventless_loop_is_a_definition_error_and_saves_nothing() -> None:
    chart = Statechart("loop", [State("a", always="b"), State("b", always="a")])
    with pytest.raises(DefinitionError, match="stable configuration"):
        chart.start()
