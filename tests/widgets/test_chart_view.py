"""MachineView of a statechart instance: configuration lit, buttons, microstep mode, timers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from machine_support import MachineFrontend
from widget_support import run_async, until

from agentnb import ManualClock, Parallel, SqliteCheckpointer, State, Statechart
from agentnb.errors import DefinitionError
from agentnb.fsm import ChartInstance, Send
from agentnb.widgets import MachineView


def oven(store: Any = None) -> ChartInstance:
    chart = Statechart(
        "oven",
        [
            Parallel(
                "appliance",
                states=[
                    State("door", states=[State("shut", on={"open": "ajar"}), State("ajar")]),
                    State(
                        "heat",
                        states=[
                            State("off", on={"start": {"target": "on", "guard": "In('shut')"}}),
                            State("on", on_enter=[Send("beep", delay=30, id="cook")],
                                  on={"open": "off"}),
                        ],
                    ),
                ],
            )
        ],
    )  # fmt: skip
    return chart.start("kitchen", store=store, clock=ManualClock(0))


def test_the_view_lights_the_whole_configuration_and_says_which_events_move_it() -> None:
    view = MachineView(oven())
    try:
        assert view.overlay["active"] == ["appliance", "door", "shut", "heat", "off"]
        buttons = {b["event"]: b for b in view.buttons}
        assert list(buttons) == ["open", "start"]
        assert buttons["start"]["enabled"] is True
        assert buttons["start"]["reason"] == "off --start--> on"
        assert view.final is False
        assert view.timers == []
    finally:
        view.close()


def test_sending_from_the_panel_shows_the_microsteps_and_the_timer(tmp_path: Path) -> None:
    with SqliteCheckpointer(tmp_path / "oven.sqlite3") as store:
        fe = MachineFrontend(oven(store))  # type: ignore[arg-type]
        try:
            fe.hello()

            async def main() -> None:
                await until(lambda: fe.customs("diagram"), what="the drawing")
                fe.press("start")
                # Shown and done: a press while the first is still being processed is
                # refused as busy (the step is shown before its task has finished).
                await until(
                    lambda: "on" in fe.view.state.split() and not fe.view.busy, what="the step"
                )
                fe.press("open")
                # The state: what a refresh sets last, so the microsteps are set with it.
                await until(lambda: "ajar" in fe.view.state.split(), what="the second")

            run_async(main)
            view = fe.view
            [step] = view.microsteps
            assert step["taken"] == ["<shut --open--> ajar>", "<on --open--> off>"]
            assert step["exited"] == ["on", "shut"]
            assert sorted(step["entered"]) == ["ajar", "off"]
            assert step["active"] == ["appliance", "door", "ajar", "heat", "off"]
            assert len(step["edges"]) == 2
            assert view.timers == [
                {"event": "beep", "sendid": "cook", "fire_at": 30.0, "in": 30.0}
            ]  # the start scheduled it; nothing cancelled it
            diagram = fe.customs("diagram")[-1]
            assert "appliance" in diagram["nodes"].values()  # clusters are lit like nodes
        finally:
            fe.close()


def test_a_reloader_is_refused_for_a_statechart() -> None:
    with pytest.raises(DefinitionError, match="statecharts"):
        MachineView(oven(), reloader=object())  # type: ignore[arg-type]


def test_instance_view_opens_the_panel_for_a_statechart() -> None:
    view = oven().view()
    try:
        assert isinstance(view, MachineView)
        assert view.state == "shut off"
    finally:
        view.close()
