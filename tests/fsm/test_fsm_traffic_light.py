"""The seed's examples: the traffic light, and the agent that must not get stuck waiting.

The seed (an article on event-driven agents) builds a transition table keyed by Enum states,
prints "Invalid transition" for a bad event, keeps the data out of the state, and gives each
event an id so a retry returns the cached result.
"""

from __future__ import annotations

from enum import Enum, auto
from pathlib import Path
from typing import Any

import pytest
from fsm_support import Light, Sender, traffic_light

from agentnb.errors import DefinitionError, TransitionNotAllowed
from agentnb.fsm import StateMachine, load_machine

DATA = Path(__file__).parent / "data"


def test_the_light_cycles_red_green_yellow_red(send: Sender) -> None:
    light = traffic_light().start("crossing")
    seen = [light.current]
    for _ in range(3):
        send(light, "timer")
        seen.append(light.current)
    assert seen == [Light.RED, Light.GREEN, Light.YELLOW, Light.RED]
    assert [str(r) for r in light.history] == [
        "#1 RED --timer--> GREEN",
        "#2 GREEN --timer--> YELLOW",
        "#3 YELLOW --timer--> RED",
    ]


def test_red_means_stop_a_go_event_is_refused_with_what_is_allowed(send: Sender) -> None:
    light = traffic_light().start()
    with pytest.raises(TransitionNotAllowed) as caught:
        send(light, "go")
    assert str(caught.value) == "event 'go' is not allowed in state 'RED'. Allowed now: 'timer'."


def test_the_light_loaded_from_json_behaves_like_the_enum_one(send: Sender) -> None:
    def count_cycle(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        return {"cycles": context.get("cycles", 0) + 1}

    from_file = load_machine(DATA / "traffic_light.json", registry={"count_cycle": count_cycle})
    in_code = traffic_light()
    a, b = from_file.start(), in_code.start()
    for _ in range(7):
        send(a, "timer")
        send(b, "timer")
        assert a.state == b.state
    assert a.context == {"cycles": 3}


class AgentState(Enum):
    IDLE = auto()
    PROCESSING = auto()
    WAITING = auto()


def test_the_seeds_agent_table_is_refused_because_waiting_is_a_dead_end() -> None:
    agent = StateMachine("agent", states=AgentState, initial=AgentState.IDLE)
    agent.add_transition(AgentState.IDLE, "start", AgentState.PROCESSING)
    agent.add_transition(AgentState.PROCESSING, "complete", AgentState.IDLE)
    agent.add_transition(AgentState.PROCESSING, "need_more", AgentState.WAITING)
    with pytest.raises(DefinitionError, match="'WAITING' has no outgoing transitions") as caught:
        agent.start()
    assert caught.value.fix == "Add a transition out of 'WAITING', or mark it final"


def test_the_fixed_agent_keeps_data_in_context_and_answers_retries_from_history(
    send: Sender,
) -> None:
    def remember(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        return {"inputs": [*context["inputs"], payload]}

    agent = StateMachine("agent", states=AgentState, initial=AgentState.IDLE)
    agent.add_transition(AgentState.IDLE, "start", AgentState.PROCESSING, action=remember)
    agent.add_transition(AgentState.PROCESSING, "complete", AgentState.IDLE)
    agent.add_transition(AgentState.PROCESSING, "need_more", AgentState.WAITING)
    agent.add_transition(AgentState.WAITING, "input", AgentState.PROCESSING, action=remember)
    session = agent.start("user-42", context={"inputs": []})
    send(session, "start", "hello", "msg-1")
    send(session, "need_more", None, "msg-2")
    first = send(session, "input", "more details", "msg-3")
    retried = send(session, "input", "more details", "msg-3")
    assert retried == first
    assert session.current is AgentState.PROCESSING
    assert session.context == {"inputs": ["hello", "more details"]}
