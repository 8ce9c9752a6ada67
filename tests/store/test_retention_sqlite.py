"""SQLite retention: space returned, the audit's append-only rule in SQL, old files, processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentnb import END, RunActive, RunNotFound, SqliteCheckpointer, StateGraph, Status
from agentnb.store.sql_retention import AUDIT_TABLES, RUN_TABLES

DECISION_COLUMNS = (
    "id, run_id, node, step, decision, approver, comment, digest_shown, pending_digest, "
    "accepted, reason, at, identity"
)

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
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        empty = file_bytes(path)  # the schema's pages: they stay
        grow(store, "keep", 5)
        grow(store, "big", 150)
        store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        full = file_bytes(path)
        pruned = store.prune(before=FUTURE, status="completed")
        assert set(pruned.runs) == {"keep", "big"}
        assert pruned.space_returned
        assert pruned.freed_bytes > (full - empty) * 0.9
    assert file_bytes(path) < empty + (full - empty) * 0.1


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
    # The columns of version 4: later migrations may add some, never change these. The
    # states become snapshots and deltas (0008): test_migration_deltas compares each one.
    entries_sql = "SELECT run_id, seq, step, node, events, at FROM entries ORDER BY 1, 2"
    decisions_sql = f"SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id"
    entries = before.execute(entries_sql).fetchall()
    decisions = before.execute(decisions_sql).fetchall()
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
        assert db.execute(entries_sql).fetchall() == entries
        assert db.execute(decisions_sql).fetchall() == decisions
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


@pytest.mark.slow
def test_prune_racing_workers_that_continue_the_same_runs_never_deletes_one_being_driven(
    tmp_path: Path,
) -> None:
    """Three processes continue 150 cancelled runs; once they are under way, this one
    prunes cancelled runs. Each run ends either deleted (no worker completed it) or
    completed, each of its nodes run exactly once (and not deleted under a worker)."""
    from agentnb.store.base import StepCommit, new_owner
    from agentnb.store.records import Event, EventType

    sys.path.insert(0, str(Path(__file__).parent))
    from retention_worker import workflow

    path, go, ids = tmp_path / "race.sqlite3", tmp_path / "go", tmp_path / "ids.json"
    trace = tmp_path / "trace"
    run_ids = [f"run-{i}" for i in range(150)]
    with SqliteCheckpointer(path) as store:
        wf = workflow(store)
        for run_id in run_ids:
            wf.start({"n": 0}, run_id=run_id)
            fence = store.acquire(run_id, new_owner()).fence
            stop = Event(run_id, 2, 0, EventType.CANCELLED, "a", {}, time.time())
            change = StepCommit(Status.CANCELLED, "a", 0, [stop], release=True)
            store.commit(run_id, fence, change, lease_seconds=30)
    ids.write_text(json.dumps(run_ids))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTNB_TRACE": str(trace)}
    script = str(Path(__file__).with_name("retention_worker.py"))
    workers = [
        subprocess.Popen(
            [sys.executable, script, str(path), str(go), str(ids)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for worker in workers:
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
    with SqliteCheckpointer(path) as store:
        go.touch()
        deadline = time.monotonic() + 60
        while len(store.list_runs(Status.COMPLETED)) < 5:  # the workers are under way
            assert time.monotonic() < deadline, "the workers did not start"
        pruned = set(store.prune(before=FUTURE, status="cancelled").runs)
        results = [worker.communicate(timeout=120) for worker in workers]
        for worker, (_, err) in zip(workers, results, strict=True):
            assert worker.returncode == 0, err
        ran = [tuple(line.split()) for line in trace.read_text().splitlines()]
        assert ran, "no worker continued a run"
        assert len(ran) == len(set(ran))  # no node of any run ran twice
        for run_id in run_ids:
            nodes = sorted(node for node, of in ran if of == run_id)
            if run_id in pruned:
                assert nodes == []  # nothing ran in a run that was deleted
                with pytest.raises(RunNotFound):
                    store.get_run(run_id)
            else:
                assert nodes == ["a", "b", "c"]
                assert store.get_run(run_id).status == Status.COMPLETED
                assert store.checkpoint(run_id).state == {"n": 3}


def test_an_approval_with_edits_keeps_its_edit_with_the_audit_and_loses_it_with_it(
    tmp_path: Path,
) -> None:
    from agentnb.examples import build_refund_workflow

    path = tmp_path / "edits.sqlite3"
    with SqliteCheckpointer(path) as store:
        for run_id in ("kept", "gone"):
            run = build_refund_workflow(store, []).start({"requested": 1000}, run_id=run_id)
            run.run()
            run.approve(by="ada", update={"amount": 400})
            run.run()
        edits = store._db.execute("SELECT count(*) FROM decision_edits").fetchone()
        assert edits == (2,)
        store.delete_run("kept")
        store.delete_run("gone", include_audit=True)
        (kept,) = store.decisions()
        assert kept.run_id == "kept"
        assert kept.edit is not None
        assert kept.edit["update"] == {"amount": 400}
        assert store._db.execute("SELECT count(*) FROM decision_edits").fetchone() == (1,)
    db = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE decision_edits SET edit = '{}'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM decision_edits")  # its decision row still exists


def test_a_superstep_waiting_for_two_approvals_is_never_pruned_and_its_tasks_go_with_it(
    tmp_path: Path,
) -> None:
    g = StateGraph("fan")
    g.add_node("start", lambda s: {"n": 1})
    g.add_node("left", lambda s: {"left": True})
    g.add_node("right", lambda s: {"right": True})
    g.set_entry_point("start").add_edge("start", "left").add_edge("start", "right")
    g.add_interrupt_before("left").add_interrupt_before("right")
    with SqliteCheckpointer(path := tmp_path / "fan.sqlite3") as store:
        run = g.compile(store).start({"n": 0}, run_id="fan")
        run.run()
        assert store.get_run("fan").status == Status.PENDING
        assert len(store.pending_tasks("fan")) == 2
        assert store.prune(before=FUTURE, include_audit=True).runs == ()
        with pytest.raises(RunActive):
            store.delete_run("fan")
        for task in store.pending_tasks("fan"):
            if task.status == "pending":
                store.decide("fan", "rejected", "ada", task=task.task_id)
                break
        assert store.get_run("fan").status == Status.REJECTED
        assert store.prune(before=FUTURE).runs == ("fan",)
        for table in ("pending_tasks", "pending_writes", "entries"):
            count = store._db.execute(f"SELECT count(*) FROM {table}").fetchone()
            assert count == (0,), table
    assert path.exists()
