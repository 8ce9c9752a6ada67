"""Running instances, each behaviour checked through ``send`` and ``asend`` (``send`` fixture)."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
from fsm_support import Light, Sender, traffic_light

from agentnb.errors import (
    DefinitionError,
    IncompatibleMachine,
    InstanceConflict,
    InstanceNotFound,
    InvalidState,
    StoreError,
    TransitionNotAllowed,
)
from agentnb.fsm import MemoryMachineStore, StateMachine
from agentnb.fsm.instance import rebind_all


def counting_machine(calls: list[str]) -> StateMachine:
    """idle --start--> busy --done--> idle, with every hook and action logging its call."""

    def log(name: str, delta: dict[str, Any] | None = None) -> Any:
        def hook(context: dict[str, Any], payload: Any) -> dict[str, Any] | None:
            calls.append(name)
            return delta

        hook.__name__ = name
        return hook

    async def count(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        calls.append("action")
        return {"jobs": context["jobs"] + 1, "last": payload}

    m = StateMachine("worker", ["idle", "busy"], initial="idle")
    m.add_transition("idle", "start", "busy", action=count)
    m.add_transition("busy", "done", "idle")
    m.on_exit("idle", log("exit_idle", {"left": "idle"}))
    m.on_enter("busy", log("enter_busy"))
    return m


def test_an_instance_starts_in_the_initial_state_with_its_context() -> None:
    light = traffic_light().start("crossing", context={"ticks": 0})
    assert light.id == "crossing"
    assert light.current is Light.RED
    assert light.state == "RED"
    assert light.context == {"ticks": 0}
    assert light.history == []


def test_send_moves_the_state_and_records_the_event(send: Sender) -> None:
    light = traffic_light().start()
    record = send(light, "timer", {"by": "clock"}, "tick-1")
    assert light.current is Light.GREEN
    assert (record.seq, record.source, record.event, record.target) == (1, "RED", "timer", "GREEN")
    assert record.event_id == "tick-1"
    assert record.payload == {"by": "clock"}
    assert light.history == [record]


def test_hooks_and_action_run_in_order_and_their_deltas_update_the_context(
    send: Sender,
) -> None:
    calls: list[str] = []
    worker = counting_machine(calls).start(context={"jobs": 0})
    record = send(worker, "start", "job-7")
    assert calls == ["exit_idle", "action", "enter_busy"]
    assert worker.context == {"jobs": 1, "last": "job-7", "left": "idle"}
    assert record.delta == {"jobs": 1, "last": "job-7", "left": "idle"}


def test_the_context_is_a_copy_that_callers_cannot_change_behind_the_instance() -> None:
    light = traffic_light().start(context={"items": [1]})
    light.context["items"].append(2)
    assert light.context == {"items": [1]}


def test_an_event_not_allowed_raises_and_leaves_the_instance_untouched(send: Sender) -> None:
    light = traffic_light().start(context={"n": 1})
    send(light, "timer")
    before = (light.state, light.context, light.history)
    with pytest.raises(TransitionNotAllowed) as caught:
        send(light, "emergency")
    assert (caught.value.event, caught.value.state, caught.value.allowed) == (
        "emergency",
        "GREEN",
        ["timer"],
    )
    assert (light.state, light.context, light.history) == before


def test_when_every_guard_fails_the_error_says_so(send: Sender) -> None:
    def road_clear(context: dict[str, Any], payload: Any) -> bool:
        return bool(context.get("clear"))

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", guard=road_clear)
    instance = m.start()
    with pytest.raises(TransitionNotAllowed, match=r"none of their guards \(road_clear\) passed"):
        send(instance, "go")
    assert instance.state == "a"


def test_an_async_guard_is_awaited(send: Sender) -> None:
    async def approved(context: dict[str, Any], payload: Any) -> bool:
        await asyncio.sleep(0)
        return payload == "yes"

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "answer", "b", guard=approved)
    instance = m.start()
    with pytest.raises(TransitionNotAllowed):
        send(instance, "answer", "no")
    send(instance, "answer", "yes")
    assert instance.is_final


def test_final_state_accepts_no_events(send: Sender) -> None:
    m = StateMachine("m", ["a", "done"], initial="a", final=["done"])
    m.add_transition("a", "finish", "done")
    instance = m.start()
    send(instance, "finish")
    assert instance.allowed_events() == []
    with pytest.raises(TransitionNotAllowed, match="none \\(final state\\)"):
        send(instance, "finish")


def test_lenient_instances_record_invalid_events_as_ignored(send: Sender) -> None:
    light = traffic_light().start(strict=False, context={"n": 1})
    record = send(light, "emergency", {"why": "test"}, "e-1")
    assert record.ignored
    assert record.reason == "not allowed in this state"
    assert (record.source, record.target, record.delta) == ("RED", "RED", {})
    assert light.current is Light.RED
    assert light.context == {"n": 1}
    assert light.history == [record]
    assert str(record) == "#1 emergency ignored in RED (not allowed in this state)"


def test_a_processed_event_id_returns_the_recorded_result_and_runs_nothing(
    send: Sender,
) -> None:
    calls: list[str] = []
    worker = counting_machine(calls).start(context={"jobs": 0})
    first = send(worker, "start", "job-1", "evt-1")
    again = send(worker, "start", "job-2", "evt-1")
    assert again == first
    assert calls == ["exit_idle", "action", "enter_busy"]
    assert worker.context["jobs"] == 1
    assert len(worker.history) == 1


def test_a_duplicate_event_id_is_answered_even_if_the_event_is_no_longer_allowed(
    send: Sender,
) -> None:
    light = traffic_light().start()
    first = send(light, "timer", event_id="once")
    send(light, "timer")
    assert send(light, "timer", event_id="once") == first
    assert light.current is Light.YELLOW


def test_a_refused_event_id_can_be_sent_again_later(send: Sender) -> None:
    def ready(context: dict[str, Any], payload: Any) -> bool:
        return payload == "ready"

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", guard=ready)
    instance = m.start()
    with pytest.raises(TransitionNotAllowed):
        send(instance, "go", "not yet", "go-1")
    assert send(instance, "go", "ready", "go-1").target == "b"


@pytest.mark.parametrize(
    ("context", "path"),
    [
        ({"when": datetime.date(2024, 1, 1)}, "context['when']"),
        ({"tags": {"a", "b"}}, "context['tags']"),
        ({1: "x"}, "context"),
        ({"x": float("nan")}, "context['x']"),
    ],
)
def test_a_context_that_is_not_json_is_refused_with_its_path(
    context: dict[Any, Any], path: str
) -> None:
    with pytest.raises(InvalidState) as caught:
        traffic_light().start(context=context)
    assert caught.value.path == path


def test_a_context_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(InvalidState, match="is a list, not a dict"):
        traffic_light().start(context=[1, 2])  # type: ignore[arg-type]


def test_an_action_producing_a_non_json_value_is_refused_and_nothing_is_saved(
    send: Sender,
) -> None:
    def stamp(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        return {"at": datetime.datetime(2024, 1, 1)}

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", action=stamp)
    instance = m.start()
    with pytest.raises(InvalidState) as caught:
        send(instance, "go")
    assert caught.value.path == "context['at']"
    assert (instance.state, instance.history) == ("a", [])


def test_a_non_json_payload_is_refused_before_anything_runs(send: Sender) -> None:
    light = traffic_light().start()
    with pytest.raises(InvalidState) as caught:
        send(light, "timer", {"obj": object()})
    assert caught.value.path == "payload['obj']"
    assert light.history == []


def test_an_action_that_raises_leaves_the_instance_untouched(send: Sender) -> None:
    def explode(context: dict[str, Any], payload: Any) -> None:
        raise RuntimeError("payment service down")

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "pay", "b", action=explode)
    instance = m.start(context={"paid": False})
    with pytest.raises(RuntimeError, match="payment service down"):
        send(instance, "pay", event_id="pay-1")
    assert (instance.state, instance.context, instance.history) == ("a", {"paid": False}, [])


def test_an_action_returning_something_else_than_a_dict_is_a_definition_error(
    send: Sender,
) -> None:
    def wrong(context: dict[str, Any], payload: Any) -> Any:
        return ["not", "a", "delta"]

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", action=wrong)
    instance = m.start()
    with pytest.raises(DefinitionError, match="returned a list, not a dict or None"):
        send(instance, "go")
    assert instance.state == "a"


def test_hooks_get_a_copy_so_mutating_it_does_not_leak(send: Sender) -> None:
    def mutate(context: dict[str, Any], payload: Any) -> None:
        context["sneaky"] = True

    m = StateMachine("m", ["a", "b"], initial="a", final=["b"])
    m.add_transition("a", "go", "b", action=mutate)
    instance = m.start()
    send(instance, "go")
    assert instance.context == {}


def test_a_second_sender_that_commits_first_makes_the_first_fail_cleanly() -> None:
    gate = asyncio.Event()

    async def slow(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        await gate.wait()
        return {"by": "slow"}

    m = StateMachine("m", ["a", "b", "c"], initial="a", final=["b", "c"])
    m.add_transition("a", "slow", "b", action=slow)
    m.add_transition("a", "fast", "c")
    instance = m.start()

    async def race() -> None:
        slow_send = asyncio.ensure_future(instance.asend("slow"))
        await asyncio.sleep(0)
        await instance.asend("fast")
        gate.set()
        with pytest.raises(InstanceConflict, match="moved on while event 'slow' was processed"):
            await slow_send

    asyncio.run(race())
    assert instance.state == "c"
    assert [r.event for r in instance.history] == ["fast"]


def test_instances_share_state_through_their_store(send: Sender) -> None:
    store = MemoryMachineStore()
    lights = traffic_light()
    one = lights.start("x", store=store)
    send(one, "timer")
    other = lights.resume("x", store=store)
    assert other.current is Light.GREEN
    send(other, "timer")
    assert one.current is Light.YELLOW
    assert len(one.history) == 2


def test_starting_an_id_that_exists_points_to_resume() -> None:
    store = MemoryMachineStore()
    traffic_light().start("x", store=store)
    with pytest.raises(StoreError, match=r"already exists.*machine.resume\('x'"):
        traffic_light().start("x", store=store)


def test_resuming_an_unknown_instance_is_run_not_found() -> None:
    with pytest.raises(InstanceNotFound):
        traffic_light().resume("ghost", store=MemoryMachineStore())


def test_resuming_with_another_machine_is_refused() -> None:
    store = MemoryMachineStore()
    traffic_light().start("x", store=store)
    door = StateMachine("door", ["RED"], initial="RED", final=["RED"])
    with pytest.raises(IncompatibleMachine, match="started by machine 'traffic_light'"):
        door.resume("x", store=store)


def _lights_without_yellow() -> StateMachine:
    m = StateMachine("traffic_light", ["RED", "GREEN"], initial="RED")
    m.add_transition("RED", "timer", "GREEN")
    m.add_transition("GREEN", "timer", "RED")
    return m


def test_rebind_switches_the_definition_for_the_next_event(send: Sender) -> None:
    light = traffic_light().start()
    light.rebind(_lights_without_yellow())
    send(light, "timer")
    send(light, "timer")
    assert light.current == "RED"


def test_rebind_refuses_a_definition_without_the_current_state(send: Sender) -> None:
    old = traffic_light()
    light = old.start()
    send(light, "timer")
    send(light, "timer")
    with pytest.raises(IncompatibleMachine, match="state 'YELLOW', which the new definition"):
        light.rebind(_lights_without_yellow())
    assert light.machine is old


def test_rebind_all_moves_every_instance_or_none() -> None:
    lights = traffic_light()
    at_red, at_yellow = lights.start(), lights.start()
    at_yellow.send("timer")
    at_yellow.send("timer")
    refused = rebind_all([at_red, at_yellow], _lights_without_yellow())
    assert [(i.id, r) for i, r in refused] == [
        (at_yellow.id, "it is in state 'YELLOW', which the new definition does not have")
    ]
    assert at_red.machine is lights
    assert at_yellow.machine is lights


def test_a_definition_replaced_mid_event_without_the_target_saves_nothing() -> None:
    instance_box: list[Any] = []

    async def swap(context: dict[str, Any], payload: Any) -> None:
        # The definition is replaced while this event is being processed.
        instance_box[0].rebind(_lights_without_yellow())

    m = StateMachine("traffic_light", ["RED", "GREEN", "YELLOW"], initial="RED")
    m.add_transition("RED", "timer", "GREEN")
    m.add_transition("GREEN", "timer", "YELLOW", action=swap)
    m.add_transition("YELLOW", "timer", "RED")
    light = m.start()
    instance_box.append(light)
    light.send("timer")
    with pytest.raises(IncompatibleMachine, match="nothing was saved"):
        asyncio.run(light.asend("timer"))
    assert light.state == "GREEN"
    assert len(light.history) == 1


def test_repr_names_the_instance_and_its_state() -> None:
    light = traffic_light().start("c1")
    assert repr(light) == "<MachineInstance 'c1' of 'traffic_light': state 'RED', 0 events>"


def test_refusal_listeners_hear_refused_events_and_callers_still_get_the_error() -> None:
    from fsm_support import traffic_light

    light = traffic_light().start()
    heard: list[tuple[str, str]] = []
    remove = light.on_refused(lambda error: heard.append((error.event, error.state)))
    with pytest.raises(TransitionNotAllowed):
        light.send("walk")
    remove()
    remove()  # twice is harmless
    with pytest.raises(TransitionNotAllowed):
        light.send("walk")
    assert heard == [("walk", "RED")]
