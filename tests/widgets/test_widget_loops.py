"""Buttons pressed on another thread's event loop still drive on the panel's own loop.

JupyterLab 4.6 sends widget messages over a kernel subshell; ipykernel 7 then runs the
panel's message handler on the subshell's thread, inside that thread's event loop (seen in
the browser suite: Step handled on ``subshell-…``, the continuation after an approval on
``MainThread``). Here a thread with its own short-lived loop stands in for the subshell.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from machine_support import MachineFrontend
from widget_support import Frontend, run_async, until

from agentnb import END, SqliteCheckpointer, StateGraph
from agentnb.fsm import StateMachine


def on_another_loop(press: Callable[[], None]) -> None:
    """Call ``press`` inside the running loop of a thread of its own, as a subshell would."""

    async def handler() -> None:
        press()

    thread = threading.Thread(target=lambda: asyncio.run(handler()), name="subshell-test")
    thread.start()
    thread.join()


def test_a_step_pressed_on_a_subshells_loop_runs_the_node_on_the_panels_loop(
    store: SqliteCheckpointer,
) -> None:
    ran_on: list[str] = []
    g = StateGraph("where")
    g.add_node("a", lambda s: ran_on.append(threading.current_thread().name) or {})
    g.set_entry_point("a")
    g.add_edge("a", END)
    run = g.compile(store).start({})

    async def main() -> None:
        fe = Frontend(run)  # made in this loop, as a panel is in a cell
        try:
            on_another_loop(lambda: fe.click("step"))
            await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        finally:
            fe.close()

    run_async(main)
    assert ran_on == [threading.current_thread().name]


def test_an_event_pressed_on_a_subshells_loop_is_sent_on_the_panels_loop(
    store: SqliteCheckpointer,
) -> None:
    sent_on: list[str] = []
    lamp = StateMachine("lamp", ["OFF", "ON"], "OFF")
    lamp.add_transition(
        "OFF", "toggle", "ON", action=lambda c, p: sent_on.append(threading.current_thread().name)
    )
    lamp.add_transition("ON", "toggle", "OFF")
    instance = lamp.start("lamp-1", store=store)

    async def main() -> None:
        fe = MachineFrontend(instance)
        try:
            on_another_loop(lambda: fe.press("toggle"))
            await until(lambda: fe.view.state == "ON" and not fe.view.busy)
        finally:
            fe.close()

    run_async(main)
    assert sent_on == [threading.current_thread().name]
