"""Hot reload, with real file changes seen by a real watcher; waits have deadlines, no sleeps."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentnb.errors import IncompatibleMachine, MissingDependency, SchemaError
from agentnb.fsm import MachineReloader, ReloadResult

DEADLINE = 15.0  # generous for a loaded CI machine; a passing run takes well under a second


def light(*extra_states: str, name: str = "traffic_light", drop: str = "") -> dict[str, Any]:
    """The traffic light as a document, optionally with a blinking mode or without a colour."""
    colours = [c for c in ("red", "green", "yellow") if c != drop]
    transitions = [
        {"source": a, "event": "timer", "target": b}
        for a, b in zip(colours, colours[1:] + colours[:1], strict=True)
    ]
    for state in extra_states:
        transitions += [
            {"source": "red", "event": "malfunction", "target": state},
            {"source": state, "event": "repair", "target": "red"},
        ]
    return {
        "name": name,
        "states": colours + list(extra_states),
        "initial": "red",
        "transitions": transitions,
    }


def write(path: Path, content: dict[str, Any] | str) -> None:
    """Replace the file in one step, as editors do (write a sibling, rename it over)."""
    text = content if isinstance(content, str) else json.dumps(content, indent=2)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.fixture
def definition(tmp_path: Path) -> Path:
    path = tmp_path / "light.json"
    write(path, light())
    return path


@pytest.fixture
def reloader(definition: Path) -> Iterator[MachineReloader]:
    with MachineReloader(definition, debounce_ms=200) as watching:
        yield watching
    assert not watching.watching


def change_and_wait(reloader: MachineReloader, content: dict[str, Any] | str) -> ReloadResult:
    seen = len(reloader.results)
    write(reloader.path, content)
    result = reloader.wait_for_result(seen, timeout=DEADLINE)
    assert result is not None, f"no reload within {DEADLINE}s"
    return result


def test_a_valid_change_is_applied_and_instances_use_it(reloader: MachineReloader) -> None:
    instance = reloader.start("crossing")
    result = change_and_wait(reloader, light("blinking"))
    assert result.applied
    assert (result.generation, result.problems) == (2, ())
    assert "blinking" in reloader.machine.states
    instance.send("malfunction")
    assert instance.current == "blinking"


def test_an_invalid_change_is_refused_and_the_old_definition_kept(
    reloader: MachineReloader,
) -> None:
    before = reloader.machine
    instance = reloader.start()
    result = change_and_wait(reloader, '{"name": "traffic_light", "states": [')
    assert result.status == "refused"
    assert result.generation == 1
    assert "invalid JSON" in result.problems[0].message
    assert reloader.machine is before
    assert instance.send("timer").target == "green"


def test_a_change_that_strands_an_instance_is_refused(reloader: MachineReloader) -> None:
    before = reloader.machine
    instance = reloader.start("crossing")
    instance.send("timer")
    instance.send("timer")
    result = change_and_wait(reloader, light(drop="yellow"))
    assert result.status == "refused"
    assert [str(p) for p in result.problems] == [
        "$.states: instance 'crossing' cannot follow: it is in state 'yellow', which the new "
        "definition does not have (Keep the state until no instance is in it)"
    ]
    assert reloader.machine is before
    assert instance.machine is before
    assert instance.send("timer").target == "red"


def test_after_a_refusal_the_next_valid_change_is_applied(reloader: MachineReloader) -> None:
    assert not change_and_wait(reloader, "not: [valid").applied
    result = change_and_wait(reloader, light("blinking"))
    assert result.applied
    assert result.generation == 2


def test_callbacks_see_every_result_and_a_failing_one_does_not_stop_watching(
    definition: Path,
) -> None:
    seen: list[ReloadResult] = []

    def on_reload(result: ReloadResult) -> None:
        seen.append(result)
        raise RuntimeError("callback bug")

    with MachineReloader(definition, on_reload=on_reload, debounce_ms=200) as watching:
        change_and_wait(watching, light("blinking"))
        change_and_wait(watching, {**light("blinking"), "description": "third version"})
    assert [(r.status, r.generation) for r in seen] == [("applied", 2), ("applied", 3)]
    assert [str(e) for e in watching.callback_errors] == ["callback bug"] * 2


def test_reload_on_demand_works_without_a_watcher(definition: Path) -> None:
    lights = MachineReloader(definition)
    assert not lights.watching
    write(definition, light(name="renamed"))
    result = lights.reload()
    assert result.status == "refused"
    assert "the name changed from 'traffic_light' to 'renamed'" in result.problems[0].message
    write(definition, light("blinking"))
    assert lights.reload().applied
    assert lights.results == [result, lights.results[1]]


def test_a_deleted_file_on_demand_is_refused(definition: Path) -> None:
    lights = MachineReloader(definition)
    definition.unlink()
    result = lights.reload()
    assert result.status == "refused"
    assert "cannot read the file" in result.problems[0].message


def test_tracking_moves_a_compatible_instance_to_the_live_definition(definition: Path) -> None:
    started_elsewhere = MachineReloader(definition).machine.start()
    started_elsewhere.send("timer")
    lights = MachineReloader(definition)
    write(definition, light("blinking"))
    assert lights.reload().applied
    lights.track(started_elsewhere)
    assert started_elsewhere.machine is lights.machine
    started_elsewhere.send("timer")
    started_elsewhere.send("timer")
    assert started_elsewhere.send("malfunction").target == "blinking"


def test_an_invalid_file_at_the_start_raises(tmp_path: Path) -> None:
    path = tmp_path / "light.yaml"
    path.write_text("name: [")
    with pytest.raises(SchemaError, match="invalid YAML"):
        MachineReloader(path)


def test_tracking_checks_compatibility(definition: Path) -> None:
    lights = MachineReloader(definition)
    other = MachineReloader(definition).machine.start()
    other.send("timer")
    other.send("timer")  # yellow
    write(definition, light(drop="yellow"))
    assert lights.reload().applied
    with pytest.raises(IncompatibleMachine, match="state 'yellow'"):
        lights.track(other)


def test_watching_without_watchfiles_names_the_extra(
    definition: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    lights = MachineReloader(definition)
    with pytest.raises(MissingDependency) as caught:
        lights.watch()
    assert (caught.value.package, caught.value.extra) == ("watchfiles", "config")
