"""MachineView without a browser: buttons, reasons, refusals, history, drawing — on each
checkpointer's machine store."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from machine_support import MachineFrontend, traffic_light
from widget_support import displayed, run_async, until

from agentnb import MemoryCheckpointer, SqliteCheckpointer
from agentnb.errors import TransitionNotAllowed
from agentnb.fsm import MachineInstance
from agentnb.store.base import Checkpointer
from agentnb.widgets import MachineView, view_machine
from agentnb.widgets._snapshot import SNAPSHOT_CLASS


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkpointer]:
    """Each backend's machine store (``checkpointer.machines``) holds the instances."""
    if request.param == "memory":
        yield MemoryCheckpointer()
    else:
        with SqliteCheckpointer(tmp_path / "machines.sqlite3") as store:
            yield store


@pytest.fixture
def light(checkpointer: Checkpointer) -> MachineInstance:
    return traffic_light().start("crossing-1", {"night": False}, store=checkpointer)


def test_the_view_shows_where_the_instance_stands_as_soon_as_it_is_made(
    light: MachineInstance,
) -> None:
    v = view_machine(light)
    try:
        assert isinstance(v, MachineView)
        assert (v.state, v.seq, v.final, v.generation) == ("RED", 0, False, 1)
        assert v.title == "traffic_light · instance crossing-1"
        assert v.context == {"night": False}
        assert v.overlay["current"] == "RED"
        assert v.overlay["last"] == ["START", "RED", ""]
        assert v.reload == {}
        assert "RED after 0" in repr(v)
    finally:
        v.close()


def test_allowed_events_are_enabled_and_the_others_say_why_not(light: MachineInstance) -> None:
    v = MachineView(light)
    try:
        buttons = {b["event"]: b for b in v.buttons}
        assert list(buttons) == ["timer", "hurry", "night", "off"]  # every event, in order
        assert buttons["timer"] == {
            "event": "timer", "enabled": True, "reason": "RED → GREEN", "target": "GREEN"
        }  # fmt: skip
        assert buttons["hurry"]["enabled"] is False
        assert buttons["hurry"]["reason"] == "not allowed in RED"
        assert buttons["night"]["enabled"] is False
        assert buttons["night"]["reason"] == "guard night_mode refuses this context"
        assert buttons["off"]["enabled"] is True
    finally:
        v.close()


def test_a_guard_that_passes_on_the_context_enables_its_button(checkpointer: Checkpointer) -> None:
    night = traffic_light().start("crossing-2", {"night": True}, store=checkpointer)
    v = MachineView(night)
    try:
        (button,) = [b for b in v.buttons if b["event"] == "night"]
        assert button["enabled"] is True
        assert button["reason"] == "RED → YELLOW (guard night_mode passes)"
    finally:
        v.close()


def test_a_button_sends_its_event_and_the_view_follows(light: MachineInstance) -> None:
    fe = MachineFrontend(light)
    try:
        fe.hello()

        async def main() -> None:
            await until(lambda: fe.customs("diagram"), what="the drawing")
            fe.press("timer")
            # Done, not only shown: the notice is said when the press's task has finished.
            await until(lambda: fe.view.state == "GREEN" and not fe.view.busy, what="the step")
            await until(lambda: len(fe.history()) == 1, what="the history row")

        run_async(main)
        v = fe.view
        assert light.state == "GREEN"
        assert v.seq == 1
        assert v.notice == "#1 RED --timer--> GREEN"
        assert v.error == ""
        assert v.overlay["current"] == "GREEN"
        assert v.overlay["last"] == ["RED", "GREEN", "timer"]
        assert fe.button("hurry")["enabled"] is True
        assert fe.button("timer")["reason"] == "GREEN → YELLOW"
        (row,) = fe.history()
        assert (row["seq"], row["event"], row["source"], row["target"]) == (
            1, "timer", "RED", "GREEN"
        )  # fmt: skip
        assert row["ignored"] is False
    finally:
        fe.close()


def test_parallel_transitions_between_two_states_light_apart(light: MachineInstance) -> None:
    light.send("timer")
    fe = MachineFrontend(light)
    try:
        fe.hello()

        async def main() -> None:
            await until(lambda: fe.customs("diagram"), what="the drawing")
            fe.press("hurry", payload='{"speed": 30}')
            await until(lambda: fe.view.state == "YELLOW", what="the hurried transition")

        run_async(main)
        (diagram,) = fe.customs("diagram")
        keyed_edges = [e for e in diagram["edges"].values() if e[:2] == ["GREEN", "YELLOW"]]
        assert sorted(e[2] for e in keyed_edges) == ["hurry", "timer"]
        overlay = fe.view.overlay
        assert overlay["last"] == ["GREEN", "YELLOW", "hurry"]
        assert ["GREEN", "YELLOW", "hurry", 1] in overlay["keyed"]
        assert not any(k[:3] == ["GREEN", "YELLOW", "timer"] for k in overlay["keyed"])
        assert fe.view.context["hurried"] == 1  # the action ran once, on the real send
        assert fe.view.changed == ["hurried"]
    finally:
        fe.close()


def test_a_guard_refusing_the_typed_payload_shows_the_refusal(light: MachineInstance) -> None:
    light.send("timer")
    fe = MachineFrontend(light)
    try:
        assert fe.button("hurry")["enabled"] is True  # no payload: the guard lets it pass

        async def main() -> None:
            fe.press("hurry", payload='{"speed": 90}')
            await until(lambda: fe.view.error and not fe.view.busy, what="the refusal")

        run_async(main)
        assert fe.view.error.startswith("Refused: event 'hurry' was refused in state 'GREEN'")
        assert "slow_enough" in fe.view.error
        assert (light.state, len(light.history)) == ("GREEN", 1)
    finally:
        fe.close()


def test_an_event_refused_in_code_shows_in_the_panel_and_still_raises(
    light: MachineInstance,
) -> None:
    v = MachineView(light, poll_interval=3600)
    try:
        with pytest.raises(TransitionNotAllowed) as refused:
            light.send("hurry")

        async def main() -> None:
            await until(lambda: v.error, what="the refusal in the panel")

        run_async(main)
        assert v.error == f"Refused: {refused.value}"
        assert "'hurry' is not allowed in state 'RED'" in v.error
    finally:
        v.close()
    assert "asend" not in vars(light)  # the instance has its class's asend back


def test_a_newer_transition_makes_a_refusal_stale(light: MachineInstance) -> None:
    v = MachineView(light, poll_interval=3600)
    try:
        with pytest.raises(TransitionNotAllowed):
            light.send("hurry")

        async def main() -> None:
            await until(lambda: v.error, what="the refusal")
            light.send("timer")
            await until(lambda: v.state == "GREEN" and not v.error, what="the error to go")

        run_async(main)
    finally:
        v.close()


def test_a_click_from_a_view_that_fell_behind_is_refused(light: MachineInstance) -> None:
    fe = MachineFrontend(light)
    try:

        async def main() -> None:
            light.send("timer")  # elsewhere, before the browser heard of it
            fe.press("timer", seq=0)
            await until(lambda: "moved on" in fe.view.error, what="the refusal")

        run_async(main)
        assert "now in GREEN after 1 events" in fe.view.error
        assert (light.state, len(light.history)) == ("GREEN", 1)
    finally:
        fe.close()


@pytest.mark.parametrize(
    ("event", "payload", "message"),
    [
        ("timer", "{speed: 3", "The payload is not JSON"),
        ("timer", "NaN", "NaN is not JSON"),
        ("<script>x</script>", "", "traffic_light has no event '<script>x</script>'"),
    ],
)
def test_what_cannot_be_sent_is_refused_before_anything_runs(
    light: MachineInstance, event: str, payload: str, message: str
) -> None:
    fe = MachineFrontend(light)
    try:

        async def main() -> None:
            fe.press(event, payload=payload)
            await until(lambda: fe.view.error, what="the refusal")

        run_async(main)
        assert message in fe.view.error
        assert light.history == []
    finally:
        fe.close()


def test_an_action_that_raises_is_reported_and_nothing_is_saved(
    checkpointer: Checkpointer,
) -> None:
    from agentnb.fsm import StateMachine

    def explode(context: dict[str, Any], payload: Any) -> None:
        raise RuntimeError("bulb burnt out")

    lamp = StateMachine("lamp", ["off", "on"], "off", ["on"])
    lamp.add_transition("off", "flip", "on", action=explode)
    instance = lamp.start("lamp-1", store=checkpointer)
    fe = MachineFrontend(instance)
    try:

        async def main() -> None:
            fe.press("flip")
            await until(lambda: fe.view.error and not fe.view.busy, what="the failure")

        run_async(main)
        assert fe.view.error == "'flip' failed: RuntimeError: bulb burnt out"
        assert instance.state == "off"
    finally:
        fe.close()


def test_an_ignored_event_is_marked_in_the_history_and_shown(checkpointer: Checkpointer) -> None:
    lax = traffic_light().start("crossing-3", store=checkpointer, strict=False)
    fe = MachineFrontend(lax, poll_interval=0.05)
    try:
        fe.hello()

        async def main() -> None:
            lax.send("hurry")  # recorded as ignored: no listener is told, the poll finds it
            await until(lambda: len(fe.history()) == 1, what="the ignored record")
            await until(lambda: fe.view.error, what="the message")

        run_async(main)
        (row,) = fe.history()
        assert row["ignored"] is True
        assert row["reason"] == "not allowed in this state"
        assert fe.view.error.startswith("Refused and recorded: #1 hurry ignored in RED")
        assert fe.view.state == "RED"
    finally:
        fe.close()


def test_transitions_by_code_reach_the_view_without_a_poll(
    light: MachineInstance, checkpointer: Checkpointer
) -> None:
    v = MachineView(light, poll_interval=3600)  # only the machine listener can wake it
    other = light.machine.resume(light.id, store=checkpointer)  # another handle, same store

    async def main() -> None:
        await asyncio.to_thread(other.send, "timer")
        await until(lambda: v.state == "GREEN", what="the transition")

    try:
        run_async(main)
    finally:
        v.close()
    assert v._saw not in light.machine.listeners


def test_a_final_state_disables_every_button(light: MachineInstance) -> None:
    light.send("off")
    v = MachineView(light)
    try:
        assert v.final is True
        assert v.overlay["status"] == "completed"
        assert all(not b["enabled"] for b in v.buttons)
        assert {b["reason"] for b in v.buttons} == {"not allowed in OFF (a final state)"}
    finally:
        v.close()


def test_displaying_a_view_adds_a_static_snapshot_for_kernel_less_readers(
    light: MachineInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    light.send("timer")
    _, snapshot = displayed(MachineView(light), monkeypatch)
    assert snapshot["text/html"].startswith(f'<div class="{SNAPSHOT_CLASS}"><svg')
    assert "#1 RED --timer--> GREEN" in snapshot["text/plain"]
    assert 'context: {"night":false}' in snapshot["text/plain"]
    assert not re.search(r"<(script|img|iframe)", snapshot["text/html"])


@pytest.mark.parametrize(
    ("options", "message"),
    [({"drawer": "svg"}, "use one of auto, dot, viz"), ({"max_rate": -1}, "must be positive")],
)
def test_bad_options_are_refused_with_the_fix(
    light: MachineInstance, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        MachineView(light, **options)
