"""Machine instances persisted through the workflow checkpointer (memory and SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fsm_support import Light, Sender, traffic_light
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentnb import Checkpointer, MemoryCheckpointer, SqliteCheckpointer
from agentnb.errors import InstanceConflict, InstanceNotFound, TransitionNotAllowed

ROOT = Path(__file__).parents[2]


@pytest.fixture(params=["memory", "sqlite"])
def checkpointer(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkpointer]:
    store: Checkpointer = (
        MemoryCheckpointer()
        if request.param == "memory"
        else SqliteCheckpointer(tmp_path / "machines.sqlite3")
    )
    with store:
        yield store


def test_an_instance_lives_in_the_workflow_checkpointer(
    checkpointer: Checkpointer, send: Sender
) -> None:
    light = traffic_light().start(instance_id="corner", context={"ticks": 0}, store=checkpointer)
    send(light, "timer", {"by": "clock"}, "tick-1")
    assert light.current is Light.GREEN
    again = traffic_light().resume("corner", store=checkpointer)
    assert again.current is Light.GREEN
    assert [(r.source, r.target, r.payload) for r in again.history] == [
        ("RED", "GREEN", {"by": "clock"})
    ]
    with pytest.raises(TransitionNotAllowed):
        send(again, "honk")
    assert again.current is Light.GREEN


def test_a_repeated_event_id_returns_the_recorded_result(
    checkpointer: Checkpointer, send: Sender
) -> None:
    light = traffic_light().start(store=checkpointer)
    first = send(light, "timer", None, "tick-1")
    repeat = send(light, "timer", None, "tick-1")
    assert repeat == first
    assert light.current is Light.GREEN
    assert len(light.history) == 1


def test_unknown_instances_and_stale_writers_are_typed_errors(
    checkpointer: Checkpointer,
) -> None:
    with pytest.raises(InstanceNotFound, match="ghost"):
        traffic_light().resume("ghost", store=checkpointer)
    store = checkpointer.machines
    light = traffic_light().start(instance_id="x", store=checkpointer)
    light.send("timer")
    snapshot = store.load("x")
    assert snapshot is not None
    stale = light.history[0]
    with pytest.raises(InstanceConflict, match="moved on"):
        store.commit(snapshot, stale.__class__(**{**_fields(stale), "event_id": "other"}))
    assert light.current is Light.GREEN


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(st.sampled_from(["timer", "timer", "bogus"]), max_size=12))
def test_persisted_state_equals_memory_after_reopening(events: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.sqlite3"
        with SqliteCheckpointer(path) as store:
            live = traffic_light().start(
                instance_id="i", context={"n": 0}, store=store, strict=False
            )
            for event in events:
                live.send(event)
            state, context, history = live.state, live.context, live.history
        with SqliteCheckpointer(path) as store:
            reopened = traffic_light().resume("i", store=store, strict=False)
            assert reopened.state == state
            assert reopened.state in {s.name for s in Light}
            assert reopened.context == context
            assert reopened.history == history


@pytest.mark.slow
def test_event_ids_are_idempotent_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite3"
    with SqliteCheckpointer(path) as store:
        traffic_light().start(instance_id="shared", store=store)
    script = (
        "import sys, json\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from fsm_support import traffic_light\n"
        "from agentnb import SqliteCheckpointer\n"
        f"with SqliteCheckpointer({str(path)!r}) as store:\n"
        "    light = traffic_light().resume('shared', store=store)\n"
        "    record = light.send('timer', event_id='payment-42')\n"
        "    print(json.dumps([record.seq, record.target, light.state]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outputs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        ).stdout
        for _ in range(3)
    ]
    assert [json.loads(o) for o in outputs] == [[1, "GREEN", "GREEN"]] * 3
