"""Correct and wrong solutions of notebook 07's exercises: microwave statecharts in a store.

Like :mod:`tests.teach.scenarios`, each takes a fresh SQLite checkpointer, does what a student
would do, and returns the keyword arguments for ``grade``.
"""

from __future__ import annotations

from typing import Any

from agentnb import History, ManualClock, Parallel, SqliteCheckpointer, State, Statechart
from agentnb.fsm import Cancel, Send
from tests.teach.scenarios import Scenario


def microwave(
    *, light: str | None = None, deep: bool | None = None, after: bool = False
) -> Statechart:
    """The notebook's microwave; ``light``: the guard that turns a light region on;
    ``deep``: ``defrosting`` gets ``thawing``/``resting`` and a deep (or shallow) history;
    ``after``: ``defrosting`` switches to ``heating`` by itself after 10 s."""
    defrosting = State(
        "defrosting",
        on={"heat": "heating"},
        after={10: "heating"} if after else {},
        states=[]
        if deep is None
        else [
            State("thawing", on={"rest": "resting"}),
            State("resting", on={"thaw": "thawing"}),
        ],
    )
    regions: list[State] = [
        State(
            "door",
            states=[
                State("closed", on={"open": "opened"}),
                State("opened", on={"close": "closed"}),
            ],
        ),
        State(
            "oven",
            states=[
                State("idle", on={"start": {"target": "cooking", "guard": "In('closed')"}}),
                State(
                    "cooking",
                    states=[
                        State("heating", on={"defrost": "defrosting"}),
                        defrosting,
                        History("mode", deep=bool(deep)),
                    ],
                    on_enter=[Send("beep", delay=30, id="cook")],
                    on_exit=[Cancel("cook")],
                    on={"open": "paused", "beep": "done", "stop": "idle"},
                ),
                State("paused", on={"close": "mode"}),
                State("done", on={"open": "idle"}),
            ],
        ),
    ]
    if light is not None:
        regions.append(
            State(
                "light",
                states=[
                    State("off", always={"target": "on", "guard": light}),
                    State("on", always={"target": "off", "guard": f"not ({light})"}),
                ],
            )
        )
    return Statechart("microwave", [Parallel("appliance", states=regions)])


def light_region(store: SqliteCheckpointer, *, guard: str) -> dict[str, Any]:
    oven = microwave(light=guard).start("lamp", store=store, clock=ManualClock())
    for event in ["open", "close", "start", "open", "close", "stop"]:
        oven.send(event)
    return {"store": store}


def history(store: SqliteCheckpointer, *, deep: bool) -> dict[str, Any]:
    oven = microwave(deep=deep).start("deep", store=store, clock=ManualClock())
    for event in ["start", "defrost", "rest", "open", "close"]:
        oven.send(event)
    return {"store": store}


def delayed(store: SqliteCheckpointer, *, after: bool, answer: Any) -> dict[str, Any]:
    clock = ManualClock()
    oven = microwave(after=after).start("timed", store=store, clock=clock)
    oven.send("start")
    clock.advance(5)
    oven.send("defrost")
    clock.advance(10)
    oven.run_due()
    if not after:  # the student switches by hand: no timer of the instance's own
        oven.send("heat")
    return {"store": store, "answer": answer}


def clicks(answer: Any) -> Scenario:
    def scenario(store: SqliteCheckpointer) -> dict[str, Any]:
        panel = microwave().start("panel", store=store, clock=ManualClock())
        for event in ["start", "defrost", "stop", "start"]:
            panel.send(event)
        return {"instance": panel, "answer": answer}

    return scenario
