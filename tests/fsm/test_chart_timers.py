"""Durable timers: a delayed event is a row in the store, found after a restart, fired once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentnb import ManualClock, SqliteCheckpointer, State, Statechart
from agentnb.fsm import Cancel, Send
from tests.processes import python

WORKER = Path(__file__).with_name("chart_worker.py")
sys.path.insert(0, str(WORKER.parent))
from chart_worker import chart  # noqa: E402


def worker(*args: str) -> subprocess.Popen[str]:
    return python(WORKER, *args)


def test_a_timer_scheduled_by_one_process_is_found_and_fired_by_another(tmp_path: Path) -> None:
    db = str(tmp_path / "k.sqlite3")
    starter = worker("start", db, "k1", "1000")
    starter.communicate(timeout=120)
    assert starter.returncode == 0
    with SqliteCheckpointer(db) as store:
        clock = ManualClock(1059.0)
        kettle = chart().resume("k1", store=store, clock=clock)
        [timer] = kettle.timers()
        assert (timer.event, timer.fire_at, timer.sendid) == ("boiled", 1060.0, "boil")
        assert kettle.run_due() == []  # not due yet
        clock.advance(1)
        [record] = kettle.run_due()
        assert record.event_id == f"timer:{timer.key}"
        assert kettle.configuration == {"done"}
        assert kettle.timers() == []
        assert kettle.run_due() == []
        assert kettle.context == {"fired": 1}


def test_a_timer_survives_the_sigkill_of_the_process_that_scheduled_it(tmp_path: Path) -> None:
    db = str(tmp_path / "killed.sqlite3")
    victim = worker("hang", db, "k9", "0")
    try:
        assert victim.stdout is not None
        assert victim.stdout.readline().strip() == "started"  # committed, then blocked
        victim.send_signal(signal.SIGKILL)
    finally:
        if victim.poll() is None:
            victim.kill()
        victim.communicate(timeout=60)  # reaps it and closes its pipes
    assert victim.returncode == -signal.SIGKILL
    with SqliteCheckpointer(db) as store:
        kettle = chart().resume("k9", store=store, clock=ManualClock(60))
        assert [t.event for t in kettle.timers()] == ["boiled"]
        [record] = kettle.run_due()
        assert record.event == "boiled"
        assert kettle.context == {"fired": 1}


@pytest.mark.slow
def test_two_processes_driving_the_same_instances_fire_each_timer_once(tmp_path: Path) -> None:
    db = str(tmp_path / "race.sqlite3")
    ids = [f"k{n}" for n in range(12)]
    with SqliteCheckpointer(db) as store:
        for iid in ids:
            chart().start(iid, store=store, clock=ManualClock(0.0))
    go = tmp_path / "go"
    racers = [worker("due", db, str(go), "60", *ids) for _ in range(3)]
    go.touch()
    fired: list[list[str]] = []
    for racer in racers:
        out, _ = racer.communicate(timeout=300)
        assert racer.returncode == 0
        fired += json.loads(out)
    assert sorted(iid for iid, _ in fired) == sorted(ids)  # each timer fired once in all
    with SqliteCheckpointer(db) as store:
        for iid in ids:
            kettle = chart().resume(iid, store=store)
            assert kettle.context == {"fired": 1}
            assert [r.event for r in kettle.history] == ["boiled"]
            assert kettle.timers() == []


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_cancel_removes_the_stored_timer_and_a_new_send_with_the_id_replaces_it(
    tmp_path: Path, backend: str
) -> None:
    store = SqliteCheckpointer(tmp_path / "c.sqlite3") if backend == "sqlite" else None
    clock = ManualClock()
    chart_ = Statechart(
        "snooze",
        [
            State(
                "ringing",
                on_enter=[Send("ring", delay=10, id="alarm")],
                on={
                    "snooze": {"action": [Cancel("alarm"), Send("ring", delay=5, id="alarm")]},
                    "ring": "rung",
                },
            ),
            State("rung"),
        ],
    )
    alarm = chart_.start("a", store=store, clock=clock)
    clock.advance(8)
    alarm.send("snooze")
    assert [(t.event, t.fire_at) for t in alarm.timers()] == [("ring", 13.0)]
    clock.advance(2)
    assert alarm.run_due() == []  # the first ring (due at 10) was cancelled
    clock.advance(3)
    assert [r.event for r in alarm.run_due()] == ["ring"]
    if store is not None:
        store.close()


def test_due_timers_fire_in_fire_time_order_and_chain() -> None:
    clock = ManualClock()
    chart_ = Statechart(
        "chain",
        [
            State("a", on_enter=[Send("late", delay=3), Send("early", delay=1)], on={"early": "b"}),
            State("b", on={"late": "c"}),
            State("c", after={1: "d"}),
            State("d"),
        ],
    )
    instance = chart_.start(clock=clock)
    clock.advance(10)
    assert [r.event for r in instance.run_due()] == ["early", "late"]
    # c's own timer was scheduled at the time of the run (10): due at 11
    assert instance.configuration == {"c"}
    clock.advance(1)
    assert [r.event for r in instance.run_due()] == ["after.c.0"]
    assert instance.configuration == {"d"}
