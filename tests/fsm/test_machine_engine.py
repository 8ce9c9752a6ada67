"""One engine for machines: a flat StateMachine runs as the statechart it compiles to, in
the one instance class, kept in the one store format; async guards and actions are
awaited on the caller's loop for both kinds."""

from __future__ import annotations

import asyncio
from enum import Enum, auto
from typing import Any

import pytest

from agentnb.errors import TransitionNotAllowed
from agentnb.fsm import (
    ChartInstance,
    MachineInstance,
    MemoryMachineStore,
    State,
    Statechart,
    StateMachine,
)


class Light(Enum):
    RED = auto()
    GREEN = auto()


def lights() -> StateMachine:
    m = StateMachine("lights", Light, initial=Light.RED)
    m.add_transition(Light.RED, "timer", Light.GREEN)
    m.add_transition(Light.GREEN, "timer", Light.RED)
    return m


def test_flat_and_chart_instances_are_one_class() -> None:
    flat = lights().start()
    chart = Statechart("c", [State("a", on={"go": "b"}), State("b")]).start()
    assert ChartInstance is MachineInstance
    assert type(flat) is type(chart) is MachineInstance
    assert flat.chart is flat.machine.chart  # type: ignore[union-attr]
    assert chart.chart is chart.machine


def test_a_flat_instance_is_stored_with_its_session_like_a_chart() -> None:
    store = MemoryMachineStore()
    light = lights().start("l", store=store)
    light.send("timer")
    snap = store.load("l")
    assert snap is not None
    assert snap.chart["configuration"] == ["GREEN"]
    assert snap.chart["running"] is True


def test_current_is_the_flat_state_as_the_definition_names_it() -> None:
    light = lights().start()
    assert (light.current, light.state) == (Light.RED, "RED")
    player = Statechart(
        "p", [State("on", states=[State("low", on={"up": "high"}), State("high")])]
    ).start()
    assert player.current == player.state == "low"
    assert player.configuration == {"on", "low"}


def test_a_flat_event_name_is_matched_exactly_not_as_a_descriptor_prefix() -> None:
    light = lights().start()
    with pytest.raises(TransitionNotAllowed):
        light.send("timer.fast")
    assert light.state == "RED"


def test_a_statechart_action_may_be_async() -> None:
    async def load(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"loaded": payload}

    chart = Statechart(
        "loader",
        [State("idle", on={"load": {"target": "ready", "action": load}}), State("ready")],
    )
    instance = chart.start()
    instance.send("load", 7)
    assert (instance.state, instance.context) == ("ready", {"loaded": 7})
    other = chart.start()
    asyncio.run(other.asend("load", 8))
    assert other.context == {"loaded": 8}


@pytest.mark.parametrize("kind", ["flat", "chart"])
def test_async_actions_of_two_sends_interleave_on_the_callers_loop(kind: str) -> None:
    # Each action waits for the other's signal: one loop runs both only if neither send
    # blocks it while its action waits.
    signals: dict[str, asyncio.Event] = {}
    loops: list[asyncio.AbstractEventLoop] = []

    async def handshake(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        loops.append(asyncio.get_running_loop())
        signals[payload["me"]].set()
        await asyncio.wait_for(signals[payload["other"]].wait(), timeout=30)
        return {"met": payload["other"]}

    definition: StateMachine | Statechart
    if kind == "flat":
        definition = StateMachine("meet", ["apart", "met"], initial="apart", final=["met"])
        definition.add_transition("apart", "meet", "met", action=handshake)
    else:
        definition = Statechart(
            "meet",
            [State("apart", on={"meet": {"target": "met", "action": handshake}}), State("met")],
        )

    async def both() -> asyncio.AbstractEventLoop:
        signals.update(a=asyncio.Event(), b=asyncio.Event())
        a, b = definition.start(), definition.start()
        await asyncio.gather(
            a.asend("meet", {"me": "a", "other": "b"}), b.asend("meet", {"me": "b", "other": "a"})
        )
        assert (a.context, b.context) == ({"met": "b"}, {"met": "a"})
        return asyncio.get_running_loop()

    loop = asyncio.run(both())
    assert loops == [loop, loop]
