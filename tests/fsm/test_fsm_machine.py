"""Definitions: building, validating, and the pure transition decision."""

from __future__ import annotations

import asyncio
import re
from enum import Enum
from typing import Any

import pytest
from fsm_support import Light, traffic_light

from agentnb.errors import DefinitionError
from agentnb.fsm import StateMachine
from agentnb.fsm.loader import machine_schema
from agentnb.fsm.rules import NAME_MAX_LENGTH, NAME_PATTERN, is_valid_name


def _always(context: dict[str, Any], payload: Any) -> bool:
    return True


def _never(context: dict[str, Any], payload: Any) -> bool:
    return False


def test_enum_states_are_named_by_member_name() -> None:
    lights = traffic_light()
    assert lights.states == ("RED", "GREEN", "YELLOW")
    assert lights.initial == "RED"
    assert lights.state_value("GREEN") is Light.GREEN
    assert lights.state_value(Light.YELLOW) is Light.YELLOW


def test_list_states_are_their_own_values() -> None:
    door = StateMachine("door", ["closed", "open"], initial="closed")
    assert door.state_value("open") == "open"


def test_decide_returns_the_declared_transition_without_side_effects() -> None:
    lights = traffic_light()
    context = {"ticks": 1}
    chosen = lights.decide(Light.RED, "timer", context)
    assert chosen is not None
    assert (chosen.source, chosen.event, chosen.target) == ("RED", "timer", "GREEN")
    assert context == {"ticks": 1}


def test_decide_returns_none_for_an_event_the_state_does_not_accept() -> None:
    assert traffic_light().decide(Light.RED, "emergency", {}) is None


def test_first_passing_guard_wins_in_declaration_order() -> None:
    m = StateMachine("m", ["a", "b", "c", "d"], initial="a", final=["b", "c", "d"])
    m.add_transition("a", "go", "b", guard=_never)
    m.add_transition("a", "go", "c", guard=_always)
    m.add_transition("a", "go", "d")
    chosen = m.decide("a", "go", {})
    assert chosen is not None
    assert chosen.target == "c"


def test_unguarded_fallback_is_chosen_when_no_guard_passes() -> None:
    m = StateMachine("m", ["a", "b", "c"], initial="a", final=["b", "c"])
    m.add_transition("a", "go", "b", guard=_never)
    m.add_transition("a", "go", "c")
    chosen = m.decide("a", "go", {})
    assert chosen is not None
    assert chosen.target == "c"


def test_guards_see_context_and_payload_but_cannot_change_the_context() -> None:
    seen: list[tuple[dict[str, Any], Any]] = []

    def meddling(context: dict[str, Any], payload: Any) -> bool:
        seen.append((dict(context), payload))
        context["hacked"] = True
        return False

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", guard=meddling)
    m.add_transition("a", "go", "b")
    context = {"n": 1}
    m.decide("a", "go", context, {"p": 2})
    assert seen == [({"n": 1}, {"p": 2})]
    assert context == {"n": 1}


def test_decide_refuses_an_async_guard_and_adecide_awaits_it() -> None:
    async def slow_yes(context: dict[str, Any], payload: Any) -> bool:
        await asyncio.sleep(0)
        return True

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", guard=slow_yes)
    with pytest.raises(DefinitionError, match="is async, so decide"):
        m.decide("a", "go", {})
    chosen = asyncio.run(m.adecide("a", "go", {}))
    assert chosen is not None
    assert chosen.target == "b"


def test_a_guard_returning_none_is_a_definition_error_not_false() -> None:
    def forgot_return(context: dict[str, Any], payload: Any) -> bool:
        return None  # type: ignore[return-value]

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", guard=forgot_return)
    with pytest.raises(DefinitionError, match="returned NoneType None, not a bool") as caught:
        m.decide("a", "go", {})
    assert caught.value.fix == "Return True or False from the guard"


def test_allowed_events_lists_each_event_once_in_declaration_order() -> None:
    m = StateMachine("m", ["a", "b", "c"], initial="a", final=["b", "c"])
    m.add_transition("a", "stop", "b", guard=_never)
    m.add_transition("a", "go", "c")
    m.add_transition("a", "stop", "c")
    assert m.allowed_events("a") == ["stop", "go"]
    assert m.allowed_events("b") == []
    assert m.events == ("stop", "go")


def test_unknown_state_in_a_transition_names_the_culprit_and_suggests_a_fix() -> None:
    lights = traffic_light()
    with pytest.raises(DefinitionError, match="unknown target state 'BLUE'") as caught:
        lights.add_transition("RED", "paint", "BLUE")
    assert "Known states: 'GREEN', 'RED', 'YELLOW'" in caught.value.fix
    assert caught.value.culprit == "RED --paint--> BLUE"


def test_typo_in_a_state_name_gets_a_did_you_mean() -> None:
    with pytest.raises(DefinitionError) as caught:
        traffic_light().add_transition("RDE", "timer", "GREEN")
    assert "did you mean 'RED'?" in caught.value.fix


def test_member_of_another_enum_is_refused() -> None:
    class Other(Enum):
        RED = 1

    with pytest.raises(DefinitionError, match="belongs to Other"):
        traffic_light().add_transition(Other.RED, "timer", Light.GREEN)


def test_second_unguarded_transition_for_the_same_state_and_event_is_refused() -> None:
    lights = traffic_light()
    with pytest.raises(DefinitionError, match="second transition without a guard") as caught:
        lights.add_transition(Light.RED, "timer", Light.YELLOW)
    assert "Give one of them a guard" in caught.value.fix


def test_guarded_transition_after_the_unguarded_one_is_refused_as_dead() -> None:
    lights = traffic_light()
    with pytest.raises(DefinitionError, match="can never be chosen") as caught:
        lights.add_transition(Light.RED, "timer", Light.YELLOW, guard=_always)
    assert "unguarded transition last" in caught.value.fix


def test_final_state_with_an_outgoing_transition_is_refused() -> None:
    m = StateMachine("m", ["a", "done"], initial="a", final=["done"])
    with pytest.raises(DefinitionError, match="final state 'done' has an outgoing"):
        m.add_transition("done", "again", "a")


def test_unknown_initial_state_is_refused_at_construction() -> None:
    with pytest.raises(DefinitionError, match="initial state 'c' is not one of the states"):
        StateMachine("m", ["a", "b"], initial="c")


def test_unknown_final_state_is_refused_at_construction() -> None:
    with pytest.raises(DefinitionError, match="final state 'z' is not one of the states"):
        StateMachine("m", ["a"], initial="a", final=["z"])


def test_no_states_is_refused() -> None:
    with pytest.raises(DefinitionError, match="no states"):
        StateMachine("m", [], initial="a")


def test_duplicate_state_names_are_refused() -> None:
    with pytest.raises(DefinitionError, match="declared more than once"):
        StateMachine("m", ["a", "b", "a"], initial="a")


def test_a_single_string_of_states_is_refused_with_the_list_fix() -> None:
    with pytest.raises(DefinitionError, match="not the string") as caught:
        StateMachine("m", "abc", initial="a")
    assert caught.value.fix == "Write states=['abc', ...]"


@pytest.mark.parametrize("name", ["", "1st", "has space", "new\nline", "x" * 65, "é"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(DefinitionError, match="not a valid name"):
        StateMachine("m", ["a", name], initial="a")


def test_unreachable_state_is_refused_on_validate() -> None:
    m = StateMachine("m", ["a", "b", "island"], initial="a", final=["b"])
    m.add_transition("a", "go", "b")
    m.add_transition("island", "go", "b")
    with pytest.raises(DefinitionError, match="'island' cannot be reached") as caught:
        m.validate()
    assert caught.value.culprit == "island"


def test_non_final_dead_end_is_refused_on_validate() -> None:
    m = StateMachine("m", ["a", "b"], initial="a")
    m.add_transition("a", "go", "b")
    with pytest.raises(DefinitionError, match="'b' has no outgoing transitions"):
        m.validate()


def test_validate_counts_the_other_problems() -> None:
    m = StateMachine("m", ["a", "b", "c"], initial="a")
    with pytest.raises(DefinitionError, match=r"and 2 more problems"):
        m.validate()


def test_starting_freezes_the_definition() -> None:
    lights = traffic_light()
    lights.start()
    with pytest.raises(DefinitionError, match="frozen"):
        lights.add_transition(Light.RED, "panic", Light.YELLOW, guard=_always)
    with pytest.raises(DefinitionError, match="frozen"):
        lights.on_enter(Light.RED, lambda c, p: None)


def test_starting_an_invalid_definition_is_refused() -> None:
    m = StateMachine("m", ["a", "b"], initial="a")
    with pytest.raises(DefinitionError, match="stuck"):
        m.start()


def test_decide_on_an_unknown_state_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="has no state 'BLUE'"):
        traffic_light().decide("BLUE", "timer", {})


def test_the_schema_and_the_builder_share_one_name_rule() -> None:
    name_schema = machine_schema()["$defs"]["name"]
    assert name_schema["pattern"] == NAME_PATTERN
    assert name_schema["maxLength"] == NAME_MAX_LENGTH
    for candidate in ["ok", "_x.y-z", "9", "a b", "ä", "x" * 64, "x" * 65]:
        by_schema = bool(re.search(NAME_PATTERN, candidate)) and len(candidate) <= 64
        assert is_valid_name(candidate) == by_schema, candidate


def test_transition_string_shows_the_guard() -> None:
    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    t = m.add_transition("a", "go", "b", guard=_always)
    assert str(t) == "a --go [_always]--> b"
