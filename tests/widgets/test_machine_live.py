"""MachineView with the world around it: another process, a definition file being edited,
hostile strings — and the pure pieces the panel is made of."""

from __future__ import annotations

import doctest
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from machine_support import MachineFrontend, light_document, traffic_light, write
from widget_support import XSS, run_async, until

from agentnb import SqliteCheckpointer
from agentnb._display import MachineViewable
from agentnb.errors import IncompatibleMachine, TransitionNotAllowed
from agentnb.fsm import MachineInstance, MachineReloader, StateMachine
from agentnb.render.svg import check_svg
from agentnb.widgets import MachineView, _machine_panel
from agentnb.widgets._machine_controls import tap_refusals
from agentnb.widgets._machine_panel import event_buttons
from agentnb.widgets._snapshot import machine_snapshot_bundle

DEADLINE = 15.0  # generous for a loaded CI machine; passing runs take well under a second
TAGS = re.compile(r"<\s*(script|img|iframe|object|embed)\b", re.IGNORECASE)

OTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from agentnb import SqliteCheckpointer
    from agentnb.fsm import StateMachine

    light = StateMachine("traffic_light", ["RED", "GREEN", "YELLOW", "OFF"], "RED", ["OFF"])
    light.add_transition("RED", "timer", "GREEN")
    light.add_transition("GREEN", "timer", "YELLOW")
    light.add_transition("YELLOW", "timer", "RED")
    light.add_transition("RED", "off", "OFF")
    with SqliteCheckpointer(sys.argv[1]) as store:
        print(light.resume(sys.argv[2], store=store).send("timer"))
    """
)


def test_a_transition_made_by_another_process_appears_after_a_poll(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite3"
    with SqliteCheckpointer(db) as store:
        light = traffic_light().start("crossing-9", store=store)
        fe = MachineFrontend(light, poll_interval=0.1)
        try:
            fe.hello()  # a browser view is open: the relay polls the store
            done = subprocess.run(
                [sys.executable, "-c", OTHER_PROCESS, str(db), light.id],
                capture_output=True, text=True, check=True, timeout=60,
            )  # fmt: skip
            assert done.stdout.strip() == "#1 RED --timer--> GREEN"

            async def main() -> None:
                await until(lambda: fe.view.state == "GREEN", DEADLINE, "the other process")
                await until(lambda: len(fe.history()) == 1, DEADLINE, "its history row")

            run_async(main)
            assert fe.view.overlay["last"] == ["RED", "GREEN", "timer"]
            assert fe.button("hurry")["enabled"] is True
        finally:
            fe.close()


def test_polling_runs_only_while_a_view_is_open_and_close_stops_everything() -> None:
    light = traffic_light().start("crossing-8")
    fe = MachineFrontend(light)
    fe.assert_polls_only_while_a_view_is_open()
    assert fe.view._saw not in light.machine.listeners
    assert "asend" not in vars(light)


def test_a_store_that_cannot_be_read_is_reported_in_the_panel(tmp_path: Path) -> None:
    store = SqliteCheckpointer(tmp_path / "closing.sqlite3")
    light = traffic_light().start("crossing-10", store=store)
    v = MachineView(light)
    try:
        store.close()
        v._relay.wake()

        async def main() -> None:
            await until(lambda: v.error, DEADLINE, "the error")

        run_async(main)
        assert v.error.startswith("The view could not read the instance: ")
    finally:
        v.close()


@pytest.fixture
def light_machine() -> StateMachine:
    return traffic_light()


@pytest.fixture
def reloader(tmp_path: Path) -> Iterator[MachineReloader]:
    path = tmp_path / "light.json"
    write(path, light_document())
    with MachineReloader(path, debounce_ms=100) as watching:
        yield watching


def test_hot_reload_redraws_once_and_the_buttons_follow_the_file(
    reloader: MachineReloader, tmp_path: Path
) -> None:
    with SqliteCheckpointer(tmp_path / "reload.sqlite3") as store:
        light = reloader.start("crossing-7", store=store.machines)
        fe = MachineFrontend(light, reloader=reloader, poll_interval=0.05)
        try:
            fe.hello()

            async def main() -> None:
                await until(lambda: fe.customs("diagram"), DEADLINE, "the first drawing")
                assert [b["event"] for b in fe.view.buttons] == ["timer"]
                write(reloader.path, light_document("blinking"))
                await until(
                    lambda: "malfunction" in [b["event"] for b in fe.view.buttons],
                    DEADLINE,
                    "the new event's button",
                )
                await until(lambda: len(fe.customs("diagram")) == 2, DEADLINE, "the redraw")
                assert fe.view.reload["status"] == "applied"
                fe.press("malfunction")
                await until(lambda: fe.view.state == "blinking", DEADLINE, "the new transition")
                write(reloader.path, '{"name": "traffic_light", "states": [')
                await until(lambda: fe.view.reload["status"] == "refused", DEADLINE, "refusal")

            run_async(main)
            first, redraw = fe.customs("diagram")
            assert (first["generation"], redraw["generation"]) == (1, 2)
            assert "view" not in redraw  # the redraw goes to every open view
            assert "blinking" in redraw["nodes"].values()
            assert "blinking" not in first["nodes"].values()
            assert fe.view.generation == 2
            assert fe.view.reload["generation"] == 2
            assert any("invalid JSON" in p for p in fe.view.reload["problems"])
            assert len(fe.customs("diagram")) == 2  # a refused reload draws nothing
            assert fe.button("repair")["enabled"] is True
        finally:
            fe.close()


def test_a_reloader_that_cannot_run_the_instance_is_refused(reloader: MachineReloader) -> None:
    off = traffic_light().start("crossing-6")
    off.send("off")  # OFF is not in the file's definition
    with pytest.raises(IncompatibleMachine, match="'OFF'"):
        MachineView(off, reloader=reloader)


def test_hostile_strings_reach_the_browser_as_json_data_and_the_snapshot_escaped() -> None:
    def hostile_guard(context: dict[str, Any], payload: Any) -> bool:
        return False

    hostile_guard.__name__ = XSS[1]
    machine = traffic_light()
    machine.add_transition("YELLOW", "panic", "OFF", guard=hostile_guard)
    light = machine.start(XSS[0], {XSS[0]: XSS[2], "list": XSS})
    light.send("timer", payload={"note": XSS[4]})
    light.send("timer")
    fe = MachineFrontend(light)
    try:
        fe.hello()
        with pytest.raises(TransitionNotAllowed):
            light.send("panic", payload=XSS[3])

        async def main() -> None:
            await until(lambda: fe.customs("records"), what="the replayed history")
            await until(lambda: fe.view.error, what="the refusal")

        run_async(main)
        v = fe.view
        assert v.instance_id == XSS[0]
        assert v.context[XSS[0]] == XSS[2]
        assert v.context["list"] == XSS
        assert fe.button("panic")["reason"] == f"guard {XSS[1]} refuses this context"
        assert XSS[1] in v.error
        assert fe.history()[0]["payload"] == json.dumps({"note": XSS[4]}, separators=(",", ":"))
        (diagram,) = fe.customs("diagram")
        check_svg(diagram["svg"])
        assert not TAGS.search(diagram["svg"])
        sent = json.dumps([data for data, _ in fe.sent])
        assert json.loads(sent) == [data for data, _ in fe.sent]  # data, round-tripped whole
        bundle = machine_snapshot_bundle(light)
        assert not TAGS.search(bundle["text/html"])
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in bundle["text/html"]
    finally:
        fe.close()


def test_the_browser_lays_out_the_dot_with_every_edge_key() -> None:
    light = traffic_light().start("crossing-5")
    fe = MachineFrontend(light, drawer="viz")
    try:
        diagram = fe.drawing()
        assert diagram["mode"] == "dot"
        for dom_id in [*diagram["nodes"], *diagram["edges"]]:
            assert f'id="{dom_id}"' in diagram["dot"]
        titles = set(diagram["titles"].values())
        assert {"GREEN --hurry [slow_enough]--> YELLOW", "RED --timer--> GREEN"} <= titles
    finally:
        fe.close()


def test_guards_that_are_async_or_need_a_payload_are_judged_without_running_actions() -> None:
    ran: list[str] = []

    async def daytime(context: dict[str, Any], payload: Any) -> bool:
        return not context["night"]

    def needs_code(context: dict[str, Any], payload: Any) -> bool:
        return bool(payload["code"] == 7)

    def action(context: dict[str, Any], payload: Any) -> None:
        ran.append("action")

    gate = StateMachine("gate", ["shut", "open"], "shut")
    gate.add_transition("shut", "lift", "open", guard=daytime, action=action)
    gate.add_transition("shut", "unlock", "open", guard=needs_code, action=action)
    gate.add_transition("open", "close", "shut", action=action)
    by_event = {b["event"]: b for b in event_buttons(gate, "shut", {"night": False})}
    assert by_event["lift"]["enabled"] is True
    assert by_event["lift"]["reason"] == "shut → open (guard daytime passes)"
    assert by_event["unlock"]["enabled"] is True  # the payload will decide
    assert by_event["unlock"]["reason"].startswith("guard needs_code could not decide")
    assert "TypeError" in by_event["unlock"]["reason"]
    night = {b["event"]: b for b in event_buttons(gate, "shut", {"night": True})}
    assert night["lift"]["enabled"] is False
    assert ran == []


def test_refusal_listeners_hear_every_refusal_until_removed(
    light_machine: StateMachine,
) -> None:
    light = light_machine.start()
    heard: list[str] = []
    untap_a = tap_refusals(light, lambda e: heard.append(f"a:{e.event}"))
    untap_b = tap_refusals(light, lambda e: heard.append(f"b:{e.event}"))
    with pytest.raises(TransitionNotAllowed):
        light.send("hurry")
    untap_a()
    untap_a()  # twice is harmless
    with pytest.raises(TransitionNotAllowed):
        light.send("repair")
    assert heard == ["a:hurry", "b:hurry", "b:repair"]
    untap_b()
    with pytest.raises(TransitionNotAllowed):
        light.send("hurry")
    assert heard == ["a:hurry", "b:hurry", "b:repair"]
    assert light.send("timer").target == "GREEN"


def test_an_instance_mixing_in_machine_viewable_views_itself(light_machine: StateMachine) -> None:
    started = light_machine.start("crossing-4")

    class Viewed(MachineInstance, MachineViewable):
        pass

    instance = Viewed(light_machine, started.id, store=started.store, strict=True)
    panel = instance.view(title="from the mixin")
    try:
        assert isinstance(panel, MachineView)
        assert (panel.title, panel.state) == ("from the mixin", "RED")
    finally:
        panel.close()


def test_the_panel_docstring_example_runs() -> None:
    result = doctest.testmod(_machine_panel)
    assert result.attempted > 0
    assert result.failed == 0
