"""Correct and wrong solutions of notebook 08's exercises, done with real ``agentnb worker``
processes on the test's SQLite file (the checkers read the same recorded facts from any
store; the notebook uses PostgreSQL)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentnb import SqliteCheckpointer

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))
import scale_out  # noqa: E402

TARGET = "scale_out:refunds"


def _worker(store: SqliteCheckpointer, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "agentnb", "worker", "--db", str(store.path)]
    return subprocess.Popen(
        [*command, "--workflow", TARGET, *args],
        cwd=NOTEBOOKS,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finished(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return out


def drain(store: SqliteCheckpointer) -> str:
    """One worker process until nothing is left to claim; what it said."""
    return _finished(_worker(store, "--until-idle"))


def until(condition: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def batch(store: SqliteCheckpointer, *, by_workers: bool) -> dict[str, Any]:
    """Ten small refunds: queued and drained by a worker, or run in this process."""
    workflow = scale_out.refunds(store)
    for i in range(10):
        state, run_id = {"requested": 10 + i, "lookup_seconds": 0}, f"batch-{i}"
        if by_workers:
            workflow.submit(state, run_id=run_id)
        else:
            workflow.start(state, run_id=run_id).run()
    if by_workers:
        assert "10 completed" in drain(store)
    return {"store": store}


def rejection(store: SqliteCheckpointer, *, comment: str | None) -> dict[str, Any]:
    """A refund of 2,000 paused by a worker, then rejected (with or without a reason)."""
    scale_out.refunds(store).submit({"requested": 2000, "lookup_seconds": 0}, run_id="big-1")
    assert "1 paused" in drain(store)
    store.decide("big-1", "rejected", "teacher", comment=comment)
    return {"store": store}


def approved_elsewhere(store: SqliteCheckpointer) -> dict[str, Any]:
    """The demo's refund-3: paused in one worker process, continued by another."""
    scale_out.refunds(store).submit({"requested": 900, "lookup_seconds": 0}, run_id="refund-3")
    assert "1 paused" in drain(store)
    store.decide("refund-3", "approved", "teacher")
    assert "1 completed" in drain(store)
    return {"store": store}


def handover(store: SqliteCheckpointer, *, stopped: bool) -> dict[str, Any]:
    """A slow refund: its worker SIGTERMed mid-planner and another finishing it, or one
    worker doing it all."""
    workflow = scale_out.refunds(store)
    if not stopped:
        workflow.submit({"requested": 60, "lookup_seconds": 0}, run_id="handover-1")
        assert "1 completed" in drain(store)
        return {"store": store}
    first = _worker(store)
    # 3 s, as the exercise says: SIGTERM must reach the worker while planner is in flight,
    # and on two loaded cores delivering it took longer than a 1 s lookup once.
    workflow.submit({"requested": 60, "lookup_seconds": 3}, run_id="handover-1")
    until(lambda: store.get_run("handover-1").lease_owner is not None)
    first.send_signal(signal.SIGTERM)
    assert "1 requeued" in _finished(first)
    assert "1 completed" in drain(store)
    return {"store": store}
