"""Processes taking turns on one long run, one killed mid-run: every step's state still
loads exactly, whatever process wrote its delta."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer

ROOT = Path(__file__).parents[2]
WORKER = Path(__file__).with_name("chain_worker.py")
STEPS = 150


def spawn(db: Path, mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(db), "chat", str(STEPS), mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def expected(step: int) -> dict[str, object]:
    return {"n": step, "messages": [{"role": "ai", "text": f"m{i}"} for i in range(step)]}


@pytest.mark.slow
def test_a_run_killed_mid_chain_and_continued_by_other_processes_loads_every_step(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite3"
    for mode, kill_after in (("START", 40), ("CONTINUE", 110)):
        proc = spawn(db, mode)
        assert proc.stdout is not None
        for line in proc.stdout:  # wait on the worker's own report, not on time
            if line.strip() == f"step {kill_after}":
                break
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    last = spawn(db, "CONTINUE")
    _, err = last.communicate(timeout=120)
    assert last.returncode == 0, err
    with SqliteCheckpointer(db) as store:
        assert store.get_run("chat").status == "completed"
        checkpoints = store.checkpoints("chat")
        assert [cp.step for cp in checkpoints] == list(range(STEPS + 1))
        for cp in checkpoints:
            assert cp.state == expected(cp.step)
            assert store.checkpoint("chat", cp.step).state == expected(cp.step)
        kinds = dict(
            store._db.execute(
                "SELECT step, kind FROM entries WHERE run_id = 'chat' AND state IS NOT NULL"
            ).fetchall()
        )
    # Each process that took over began with a snapshot; all else are deltas.
    snapshots = sorted(step for step, kind in kinds.items() if kind == "snapshot")
    assert snapshots[0] == 0
    assert len(snapshots) <= 6
    assert sum(kind == "delta" for kind in kinds.values()) >= STEPS - 6


@pytest.mark.slow
def test_processes_stepping_their_own_runs_on_one_file_at_once_store_every_step(
    tmp_path: Path,
) -> None:
    """Each step of a running run is one INSERT, its own transaction: four processes
    writing at once wait for each other's write lock and lose nothing."""
    db = tmp_path / "runs.sqlite3"
    SqliteCheckpointer(db).close()  # the schema, before the processes race to open it
    runs = [f"chat{i}" for i in range(4)]
    procs = [spawn_run(db, run_id) for run_id in runs]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    with SqliteCheckpointer(db) as store:
        for run_id in runs:
            assert store.get_run(run_id).status == "completed"
            checkpoints = store.checkpoints(run_id)
            assert [cp.step for cp in checkpoints] == list(range(STEPS + 1))
            assert all(cp.state == expected(cp.step) for cp in checkpoints)
            seqs = [e.seq for e in store.events(run_id)]
            assert seqs == list(range(1, len(seqs) + 1))


def spawn_run(db: Path, run_id: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(db), run_id, str(STEPS), "START"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
