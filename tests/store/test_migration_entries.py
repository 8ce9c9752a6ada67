"""Migration 0012: the journal rebuilt with its small columns first and its bodies last loses
nothing — every row byte for byte, every checkpoint's state, the events, the decisions —
and a run left running goes on."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from agentnb import SqliteCheckpointer, Status
from agentnb.store import migrate
from agentnb.store.migrate import LATEST
from tests.processes import python

DATA = Path(__file__).with_name("data")
RELEASE = DATA / "release-0.1.0.db"
"""Written by agentnb 0.1.0 (schema version 4): see make_release_db.py."""
WRITTEN = DATA / "entries-0011.db"
"""Written by agentnb at e166d3f (schema version 11): see make_entries_db.py."""
WORKER = Path(__file__).with_name("migration_worker.py")
sys.path.insert(0, str(DATA))
from make_entries_db import BLOB, fan, loop  # noqa: E402  (the workflows that wrote the file)

COLUMNS = ("run_id", "seq", "step", "kind", "node", "at", "tasks", "events", "state")
ROWS = (
    "SELECT " + ", ".join(f"{c}, typeof({c})" for c in COLUMNS) + " FROM entries "
    "ORDER BY run_id, seq"
)
"""Every value of the journal with its storage class: equal means byte for byte."""


def rows(path: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(ROWS).fetchall()
    finally:
        db.close()


def at_version_11(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bring ``path`` to schema version 11 alone (an older file as 0012 finds it)."""
    with monkeypatch.context() as patch:
        patch.setattr(migrate, "MIGRATIONS", migrate.MIGRATIONS[:11])
        patch.setattr(migrate, "LATEST", 11)
        SqliteCheckpointer(path).close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (11,)
    db.close()


def everything(path: Path) -> dict[str, Any]:
    """What a store reads back from ``path``: runs, every checkpoint (loaded one by one and
    all at once), the listing, the events, the decisions, the held tasks."""
    with SqliteCheckpointer(path) as store:
        runs = store.list_runs()
        found: dict[str, Any] = {"runs": runs, "decisions": store.decisions()}
        for run in runs:
            listing = store.list_checkpoints(run.run_id)
            found[run.run_id] = {
                "listing": listing,
                "loaded": [store.checkpoint(run.run_id, info.step) for info in listing],
                "latest": store.checkpoint(run.run_id),
                "all": store.checkpoints(run.run_id),
                "events": store.events(run.run_id),
                "held": store.pending_tasks(run.run_id),
                "writes": [store.pending_writes(run.run_id, i.step) for i in listing],
            }
    return found


def columns(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [row[1] for row in db.execute("PRAGMA table_info(entries)")]
    finally:
        db.close()


def indexes(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {
            name
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'entries' "
                "AND sql IS NOT NULL"
            )
        }
    finally:
        db.close()


@pytest.mark.slow
@pytest.mark.parametrize("source", [RELEASE, WRITTEN], ids=["release-0.1.0", "main-0011"])
def test_the_rebuilt_journal_keeps_every_row_byte_for_byte_and_reads_back_the_same(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    shutil.copy(source, path)
    at_version_11(path, monkeypatch)
    assert columns(path)[-2:] == ["tasks", "kind"]  # the old order, as ALTER TABLE left it
    before_rows, before = rows(path), everything(path)
    after = everything(path)  # opened at the latest version: 0012 applied
    assert columns(path) == list(COLUMNS)
    assert indexes(path) == {"entries_anchors"}
    assert rows(path) == before_rows
    assert after == before
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (LATEST,)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def loop_state(step: int) -> dict[str, Any]:
    return {"count": step, "messages": [f"m{i}" for i in range(step)]}


def test_the_file_main_wrote_has_its_runs_states_after_the_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(WRITTEN, path)
    with SqliteCheckpointer(path) as store:
        for step in range(231):
            assert store.checkpoint("long", step).state == loop_state(step)
        for step in range(31):
            assert store.checkpoint("big", step).state == {**loop_state(step), "blob": BLOB}
        assert store.checkpoint("edited", 105).state == {**loop_state(105), "count": 1000}
        assert [d.accepted for d in store.decisions("edited")] == [False, True]
        assert store.checkpoint("branches").tasks is not None
        assert [t.task_id for t in store.pending_tasks("branches")] == ["c"]


def test_a_run_left_running_and_one_left_pending_go_on_after_the_rebuild(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(WRITTEN, path)
    with SqliteCheckpointer(path) as store:
        run = loop(store, 230).attach("open")
        assert run.state == loop_state(150)
        run.run()
        assert run.status == Status.COMPLETED
        for step in range(231):
            assert store.checkpoint("open", step).state == loop_state(step)
        held = fan(store).attach("branches")
        held.approve(by="ada")
        held.run()
        assert held.status == Status.COMPLETED
        assert held.state == {"done": ["b", "c", "d"], "count": 3}
        seqs = [e.seq for e in store.events("open")]
        assert seqs == list(range(1, len(seqs) + 1))  # the log goes on where it stood


def test_a_process_killed_inside_the_rebuild_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(WRITTEN, path)
    before = rows(path)
    worker = python(WORKER, str(path), stdin=True)
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline()  # blocks until the worker is inside the rebuild
        assert line.split() == ["rebuilt", str(len(before))], worker.stderr
        os.kill(worker.pid, signal.SIGKILL)
        assert worker.wait(timeout=60) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate(timeout=60)
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (11,)
    db.close()
    assert columns(path)[-2:] == ["tasks", "kind"]
    assert rows(path) == before
    with SqliteCheckpointer(path) as store:  # the next open migrates it whole
        for step in range(231):
            assert store.checkpoint("long", step).state == loop_state(step)
    assert columns(path) == list(COLUMNS)
    assert rows(path) == before
