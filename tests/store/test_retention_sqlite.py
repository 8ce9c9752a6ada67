"""SQLite retention: space returned, the audit's append-only rule in SQL, old files, processes."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentnb import END, RunActive, SqliteCheckpointer, StateGraph, Status
from agentnb.store.sqlite_retention import AUDIT_TABLES, RUN_TABLES

RELEASE = Path(__file__).with_name("data") / "release-0.1.0.db"
"""Written by agentnb 0.1.0 (main at a0afa00, schema version 4): a completed loop, a pending
refund, a rejected one (with a refused attempt) and a paid one (with its effect)."""
WORKER = Path(__file__).with_name("worker.py")
ROOT = Path(__file__).parents[2]
FUTURE = time.time() + 10 * 86400


def grow(store: SqliteCheckpointer, run_id: str, steps: int) -> None:
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": ["x" * 2000]})
    g.set_entry_point("agent")
    g.add_conditional_edge(
        "agent", lambda s: "agent" if s["count"] < steps else END, ["agent", END]
    )
    g.compile(store, max_steps=steps + 1).start({"count": 0, "messages": []}, run_id=run_id).run()


def file_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def test_a_new_file_is_created_with_incremental_auto_vacuum(tmp_path: Path) -> None:
    with SqliteCheckpointer(tmp_path / "new.sqlite3"):
        pass
    assert sqlite3.connect(tmp_path / "new.sqlite3").execute("PRAGMA auto_vacuum").fetchone() == (
        2,
    )


def test_prune_gives_the_space_back_to_the_file_system(tmp_path: Path) -> None:
    path = tmp_path / "big.sqlite3"
    with SqliteCheckpointer(path) as store:
        grow(store, "keep", 5)
        grow(store, "big", 150)
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        full = file_bytes(path)
        pruned = store.prune(before=FUTURE, status="completed")
        assert set(pruned.runs) == {"keep", "big"}
        assert pruned.space_returned
        assert pruned.freed_bytes > full * 0.9
    assert file_bytes(path) < full * 0.1


def test_the_audit_of_an_existing_run_can_be_neither_changed_nor_deleted_in_sql(
    tmp_path: Path,
) -> None:
    from agentnb.examples import build_refund_workflow

    path = tmp_path / "a.sqlite3"
    with SqliteCheckpointer(path) as store:
        build_refund_workflow(store, []).start({"requested": 900}, run_id="no").run()
        store.decide("no", "rejected", "ada")
        store.delete_run("no")  # the run goes, its audit stays ...
    db = sqlite3.connect(path, isolation_level=None)
    assert db.execute("SELECT count(*) FROM decisions").fetchone() == (1,)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE decisions SET approver = 'mallory'")  # ... unchanged, always
    with SqliteCheckpointer(path) as store:
        build_refund_workflow(store, []).start({"requested": 900}, run_id="live").run()
        store.decide("live", "rejected", "ada")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM decisions WHERE run_id = 'live'")  # its run exists
    db.execute("DELETE FROM decisions WHERE run_id = 'no'")  # its run was deleted
    assert db.execute("SELECT run_id FROM decisions").fetchall() == [("live",)]


def test_every_table_with_a_run_id_is_classified_for_retention(tmp_path: Path) -> None:
    """A migration that adds per-run data must say whether retention deletes or keeps it."""
    with SqliteCheckpointer(tmp_path / "t.sqlite3") as store:
        found = store._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = [t for (t,) in found]
        with_run_id = {
            t
            for t in tables
            if any(col[1] == "run_id" for col in store._db.execute(f"PRAGMA table_info({t})"))
        }
    assert with_run_id - {"runs"} <= set(RUN_TABLES) | set(AUDIT_TABLES)


def test_a_file_from_the_current_release_is_migrated_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    shutil.copy(RELEASE, path)
    before = sqlite3.connect(path)
    assert before.execute("SELECT max(version) FROM schema_version").fetchone() == (4,)
    assert before.execute("PRAGMA auto_vacuum").fetchone() == (0,)
    entries = before.execute("SELECT * FROM entries ORDER BY run_id, seq").fetchall()
    decisions = before.execute("SELECT * FROM decisions ORDER BY id").fetchall()
    effects = before.execute("SELECT * FROM effects").fetchall()
    before.close()
    with SqliteCheckpointer(path) as store:
        runs = {r.run_id: r.status for r in store.list_runs()}
        assert runs == {
            "loop-completed": Status.COMPLETED,
            "refund-pending": Status.PENDING,
            "refund-rejected": Status.REJECTED,
            "refund-approved": Status.COMPLETED,
        }
        for run_id in runs:  # the history index was built from the old journal
            listed = [(c.step, c.node, c.at) for c in store.list_checkpoints(run_id)]
            assert listed == [(c.step, c.node, c.at) for c in store.checkpoints(run_id)]
        assert store.checkpoint("loop-completed", 3).state == {
            "count": 3,
            "messages": ["m0", "m1", "m2"],
        }
        db = store._db
        assert db.execute("SELECT * FROM entries ORDER BY run_id, seq").fetchall() == entries
        assert db.execute("SELECT * FROM decisions ORDER BY id").fetchall() == decisions
        assert db.execute("SELECT * FROM effects").fetchall() == effects
        # The first prune converts the file to incremental auto-vacuum (one full VACUUM).
        pruned = store.prune(before=FUTURE)
        assert sorted(pruned.runs) == ["loop-completed", "refund-approved", "refund-rejected"]
        assert db.execute("PRAGMA auto_vacuum").fetchone() == (2,)
        assert store.get_run("refund-pending").status == Status.PENDING
        assert len(store.decisions()) == len(decisions)
        store.decide("refund-pending", "approved", "ada")  # the old pending run still works


def spawn(*args: str, trace: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "AGENTNB_TRACE": str(trace), "PYTHONPATH": str(ROOT)}
    env["AGENTNB_BLOCK"] = "1"
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_a_run_another_process_is_driving_is_not_deleted_until_that_process_is_gone(
    tmp_path: Path,
) -> None:
    path, trace = tmp_path / "shared.sqlite3", tmp_path / "trace"
    worker = spawn("start", str(path), trace=trace)
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "blocked"  # node 'b' runs, lease held
        with SqliteCheckpointer(path) as store:
            with pytest.raises(RunActive, match="holds its lease"):
                store.delete_run("crash-run", include_audit=True)
            assert store.prune(before=FUTURE, status="cancelled").runs == ()
            assert store.get_run("crash-run").status == Status.RUNNING
            worker.send_signal(signal.SIGKILL)
            worker.communicate(timeout=30)
            # The dead worker's lease no longer protects the run.
            assert store.delete_run("crash-run").runs == ("crash-run",)
            assert store.list_runs() == []
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.communicate(timeout=30)
    assert trace.read_text().split() == ["a", "b"]
