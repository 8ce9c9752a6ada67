"""Migration 0013: flat state-machine instances written before flat machines ran on the
statechart interpreter (``machine_instances.chart`` NULL) come out in the one format every
instance has now, and go on where they were: state, context, history, an ended instance
still ended, new events saved."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer
from agentnb.errors import TransitionNotAllowed
from agentnb.store.migrate import LATEST

DATA = Path(__file__).with_name("data")
WRITTEN = DATA / "flat-machines-0012.db"
"""Written by agentnb at 0e7b105 (schema version 12): see make_flat_machines_db.py."""
sys.path.insert(0, str(DATA))
from make_flat_machines_db import light  # noqa: E402  (the definition that wrote the file)


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "flat.db"
    shutil.copy(WRITTEN, path)
    return path


def raw(path: Path, sql: str) -> list[tuple[object, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def test_the_fixture_is_in_the_old_format(old_file: Path) -> None:
    assert raw(old_file, "SELECT max(version) FROM schema_version") == [(12,)]
    assert raw(old_file, "SELECT count(*) FROM machine_instances WHERE chart IS NULL") == [(3,)]


def test_opening_the_file_gives_every_flat_instance_its_session(old_file: Path) -> None:
    SqliteCheckpointer(old_file).close()
    assert raw(old_file, "SELECT max(version) FROM schema_version") == [(LATEST,)]
    assert raw(old_file, "SELECT count(*) FROM machine_instances WHERE chart IS NULL") == [(0,)]
    with SqliteCheckpointer(old_file) as store:
        sessions = {s.instance_id: s.chart for s in store.machines.instances()}
    assert sessions == {
        "midway": {"configuration": ["YELLOW"], "history": {}, "sessionid": "midway"},
        "ended": {"configuration": ["OFF"], "history": {}, "sessionid": "ended"},
        "fresh": {"configuration": ["RED"], "history": {}, "sessionid": "fresh"},
    }


def test_a_migrated_instance_goes_on_where_it_was(old_file: Path) -> None:
    with SqliteCheckpointer(old_file) as store:
        midway = light().resume("midway", store=store)
        assert (midway.state, midway.context, midway.is_final) == ("YELLOW", {"changes": 2}, False)
        assert midway.allowed_events() == ["timer"]
        assert [str(r) for r in midway.history] == [
            "#1 RED --timer--> GREEN",
            "#2 GREEN --timer--> YELLOW",
        ]
        assert midway.history[1].payload == {"by": "ops"}
        assert midway.send("timer", event_id="t2").seq == 2  # a known id: nothing re-run
        record = midway.send("timer", event_id="t3")
        assert (str(record), record.transition, record.delta) == (
            "#3 YELLOW --timer--> RED",
            2,
            {"changes": 3},
        )
    with SqliteCheckpointer(old_file) as store:  # and it was saved
        again = light().resume("midway", store=store)
        assert (again.state, again.context, len(again.history)) == ("RED", {"changes": 3}, 3)


def test_a_migrated_instance_in_a_final_state_stays_ended(old_file: Path) -> None:
    with SqliteCheckpointer(old_file) as store:
        ended = light().resume("ended", store=store)
        assert (ended.state, ended.is_final, ended.allowed_events()) == ("OFF", True, [])
        assert [r.ignored for r in ended.history] == [True, False]
        with pytest.raises(TransitionNotAllowed):
            ended.send("timer")
        fresh = light().resume("fresh", store=store)
        assert fresh.in_state("RED")
        assert not fresh.is_final
        fresh.send("off")
        assert fresh.is_final
