"""Statecharts from JSON/YAML files (load_statechart) and XState configs (load_xstate)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentnb import ManualClock, load_statechart, load_xstate
from agentnb.errors import SchemaError

DATA = Path(__file__).parent / "data"


def count_play(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"plays": context["plays"] + 1}


def louder(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"volume": context["volume"] + 2}


REGISTRY = {"count_play": count_play, "louder": louder}


def test_a_yaml_statechart_with_nesting_history_after_and_always_runs() -> None:
    chart = load_statechart(DATA / "player.statechart.yaml", registry=REGISTRY)
    clock = ManualClock()
    player = chart.start(clock=clock)
    player.send("play")
    player.send("ff")
    player.send("pause")
    assert [t.fire_at for t in player.timers()] == [60.0]
    player.send("play")  # back through deep history
    assert player.configuration == {"playing", "fast"}
    assert player.context["plays"] == 1
    player.send("louder")  # volume 5: not yet
    assert player.in_state("playing")
    player.send("louder")  # volume 7: the eventless transition fires
    assert player.configuration == {"stopped"}
    assert player.timers() == []


def test_every_problem_is_reported_at_once_with_its_path() -> None:
    text = json.dumps(
        {
            "kind": "statechart",
            "name": "bad",
            "states": {
                "a": {"on": {"go": "nowhere", "up": {"target": "b", "guard": "missing"}}},
                "b": {"initial": "zz", "states": {"b1": {}}, "entry": "unknown_action"},
                "c": {"type": "sideways"},
                "d": {"after": {"soon": "a"}},
            },
        }
    )
    with pytest.raises(SchemaError) as error:
        load_statechart(text, registry=REGISTRY)
    paths = {p.path for p in error.value.problems}
    assert {
        "$.states.a.on.go",
        "$.states.a.on.up.guard",
        "$.states.b.initial",
        "$.states.b.entry",
        "$.states.c.type",
        "$.states.d.after",
    } <= paths, paths
    assert all(p.fix for p in error.value.problems)


def test_an_unknown_target_suggests_the_state_of_that_spelling() -> None:
    text = '{"kind": "statechart", "name": "x", "states": {"Idle": {}, "b": {"on": {"e": "idle"}}}}'
    with pytest.raises(SchemaError, match="Did you mean 'Idle'"):
        load_statechart(text)


def test_an_xstate_config_loads_with_millisecond_delays_and_relative_targets() -> None:
    config = {
        "id": "light",
        "initial": "green",
        "context": {"cycles": 0},
        "states": {
            "green": {"after": {"3000": "yellow"}},
            "yellow": {"after": {"1000": "red"}},
            "red": {
                "initial": "walk",
                "states": {"walk": {"on": {"COUNTDOWN": ".wait"}}, "wait": {}},
                "on": {"TIMER": {"target": "#green", "actions": ["count"], "guard": "ready"}},
            },
            "off": {"type": "final"},
        },
    }
    registry = {"count": lambda c, p: {"cycles": c["cycles"] + 1}, "ready": lambda c, p: True}
    chart = load_xstate(config, registry=registry)
    clock = ManualClock()
    light = chart.start(clock=clock)
    clock.advance(3)
    light.run_due()
    clock.advance(1)
    light.run_due()
    assert light.configuration == {"red", "walk"}
    light.send("COUNTDOWN")
    assert light.configuration == {"red", "wait"}
    light.send("TIMER")
    assert light.configuration == {"green"}
    assert light.context["cycles"] == 1


def test_an_xstate_config_with_unsupported_parts_is_refused_with_paths() -> None:
    config = {
        "id": "m",
        "states": {"a": {"invoke": {"src": "fetch"}, "on": {"E": {"target": "b", "cond": "nope"}}}},
    }
    with pytest.raises(SchemaError) as error:
        load_xstate(config)
    paths = {p.path for p in error.value.problems}
    assert {"$.states.a.invoke", "$.states.a.on.E.target"} <= paths, paths
