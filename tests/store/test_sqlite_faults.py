"""A SQLite file the operating system refuses is a typed StoreError that names the file
and the fix, never a raw ``sqlite3`` error, and loses nothing.

Each fault is real: a read-only file as a user without root's override, pages of a table
overwritten on disk, a full tmpfs. Every kind of call meets it (:func:`faults.attempt`):
the open, reads, a decision, a step, a new run, a statechart event.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentnb import SqliteCheckpointer
from agentnb.errors import StoreFileError
from tests.store.faults import attempt, dump, prepare, probe, tmpfs, verdict

READS = ("list_runs", "get_run", "checkpoint", "events", "machine_read")
WRITES = ("decide", "step", "start", "machine_send")
TOUCHES = {
    "decide": {"decisions", "decision_edits", "runs", "pending_tasks", "sqlite_sequence"},
    "step": {"runs", "entries", "pending_writes", "pending_tasks"},
    "start": {"runs", "entries", "run_policies"},
    "machine_send": {"machine_instances", "machine_events", "machine_timers"},
}
"""The tables each write may change."""


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory nobody may reach (pytest's tmp_path is its owner's alone), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="agentnb-faults-"))
    try:
        yield folder
    finally:
        folder.chmod(0o700)
        shutil.rmtree(folder)


def in_probe(*args: str) -> dict[str, Any]:
    return verdict(probe(*args))


def read_only(path: Path) -> None:
    path.chmod(0o444)


def test_a_read_only_file_is_read_and_every_write_to_it_is_store_read_only_and_saves_nothing(
    shared_dir: Path,
) -> None:
    # Root writes through any file mode: the probe drops to nobody first, so the mode holds.
    shared_dir.chmod(0o777)  # the directory is writable: SQLite can make its -shm beside it
    path = shared_dir / "runs.sqlite3"
    ids = prepare(path)
    read_only(path)
    before = dump(path)
    found = in_probe("readonly", str(path), json.dumps(ids))
    assert found["uid"] != 0
    calls = found["calls"]
    assert calls["open"] == ["ok", "opened"]
    assert [calls[c][0] for c in READS] == ["ok"] * len(READS)
    assert calls["checkpoint"] == ["ok", 1000]
    for call in WRITES:
        kind, message = calls[call]
        assert kind == "StoreReadOnly", (call, calls[call])
        assert message.startswith(f"cannot write to {path}: attempt to write a readonly database")
        assert "give it write permission" in message
        assert message.endswith("Nothing of this write was saved.")
    assert dump(path) == before


def test_a_read_only_file_in_a_read_only_directory_is_store_read_only_at_open(
    shared_dir: Path,
) -> None:
    path = shared_dir / "runs.sqlite3"
    ids = prepare(path)
    read_only(path)
    shared_dir.chmod(0o555)  # no -shm can be made beside it: the WAL cannot be opened
    before = path.read_bytes()
    kind, message = in_probe("readonly", str(path), json.dumps(ids))["calls"]["open"]
    assert kind == "StoreReadOnly"
    assert message.startswith(f"cannot open {path}: attempt to write a readonly database")
    assert "give it write permission on both" in message
    assert path.read_bytes() == before
    assert os.listdir(shared_dir) == [path.name]


def damage(path: Path, table: str) -> None:
    """Overwrite the first bytes of ``table``'s root page: its data, not the schema."""
    assert not Path(f"{path}-wal").exists()  # everything is in the file itself
    db = sqlite3.connect(path)
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()
    (size,) = db.execute("PRAGMA page_size").fetchone()
    db.close()
    assert root > 1  # page 1 holds the schema: it stays readable
    with open(path, "r+b") as f:
        f.seek((root - 1) * size)
        f.write(b"\xff" * 64)


@pytest.mark.parametrize(
    ("table", "broken"),
    [
        ("entries", {"list_runs", "get_run", "checkpoint", "events", "decide", "step", "start"}),
        ("runs", {"list_runs", "get_run", "decide", "step", "start"}),
        ("decisions", {"decide"}),
        ("machine_instances", {"machine_read", "machine_send"}),
    ],
)
def test_damaged_pages_of_a_table_are_store_corrupt_and_the_other_tables_stay_usable(
    tmp_path: Path, table: str, broken: set[str]
) -> None:
    path = tmp_path / "runs.sqlite3"
    ids = prepare(path)
    damage(path, table)
    before = dump(path, skip=(table,))
    calls = attempt(str(path), ids)
    assert calls["open"] == ["ok", "opened"]  # the schema is intact
    assert {c for c, (kind, _) in calls.items() if kind != "ok"} == broken
    for call in broken:
        kind, message = calls[call]
        assert kind == "StoreCorrupt", (call, calls[call])
        assert f" {path}: database disk image is malformed. " in message
        assert "restore the file from a backup" in message
    for call in set(WRITES) & broken:  # failed as it read, before writing, or as it wrote
        message = calls[call][1]
        assert message.startswith("cannot read ") or message.endswith(
            "Nothing of this write was saved."
        ), calls[call]
    # The failed writes wrote nothing: every table but the damaged one and those the
    # writes that worked wrote to is as it was.
    written = {t for c in set(WRITES) - broken for t in TOUCHES[c]}
    after = dump(path, skip=(table,))
    assert {t: rows for t, rows in after.items() if t not in written} == {
        t: rows for t, rows in before.items() if t not in written
    }
    assert set(before) - written  # something is left to compare


def test_a_full_disk_fails_each_write_with_store_full_saving_none_of_it_until_space_is_back(
    shared_dir: Path,
) -> None:
    found = verdict(probe("full", str(shared_dir), prefix=tmpfs(shared_dir)))
    path = f"{shared_dir}/runs.sqlite3"
    # The node filled the disk after its step's lease was taken: its commit fails.
    kind, message = found["node_step"]
    assert kind == "StoreFull"
    assert message.startswith(f"cannot commit to {path}: database or disk is full. Free space")
    assert message.endswith("Nothing of this write was saved.")
    full = found["full"]
    assert [full[c][0] for c in ("open", *READS)] == ["ok"] * (1 + len(READS))  # reads work
    for call in WRITES:
        assert full[call][0] == "StoreFull", (call, full[call])
        assert full[call][1].endswith("Nothing of this write was saved."), full[call]
    assert found["new_file"][0] == "StoreFull"
    assert found["unchanged"] is True  # every failed write left no trace
    assert found["filling_steps"] == [0]
    # Space back: every write works, and the failed step is taken again from its start.
    assert found["freed"]["decide"] == ["ok", True]
    assert found["freed"]["step"] == ["ok", "planner"]
    assert found["freed"]["start"] == ["ok", "started"]
    assert found["freed"]["machine_send"] == ["ok", "off"]
    assert found["filling_after"] == ["ok", "completed"]
    assert found["filling_steps_after"] == [0, 1, 2]
    assert found["fill_ran"] == 2  # its step was never saved, so it ran again
    assert found["integrity"] == "ok"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("a" * 300 + ".sqlite3", "unable to open database file (File name too long)"),
        ("", "unable to open database file (it is a directory)"),
        ("missing/x.sqlite3", "unable to open database file (there is no directory "),
        ("nul\0byte.sqlite3", "embedded null byte"),
    ],
)
def test_a_file_name_sqlite_cannot_open_is_a_store_file_error_saying_why(
    tmp_path: Path, name: str, reason: str
) -> None:
    path = str(tmp_path / name) if name else str(tmp_path)
    with pytest.raises(StoreFileError) as caught:
        SqliteCheckpointer(path)
    assert str(caught.value).startswith(f"cannot open {path}: {reason}")
    assert caught.value.path == path
    assert caught.value.doing == "open"
