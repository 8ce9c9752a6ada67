"""A worker killed with SIGKILL at the worst moments: nothing lost, nothing paid twice."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentnb import SqliteCheckpointer
from tests.processes import finished as finish
from tests.processes import python

WORKER = Path(__file__).with_name("crash_worker.py")


def worker(tmp: Path, command: str, stop_at: str = "") -> subprocess.Popen[str]:
    args = [str(tmp / "runs.sqlite3"), str(tmp / "payments.sqlite3"), "crash-run", command]
    return python(WORKER, *args, AGENTNB_STOP_AT=stop_at)


def crash_free(tmp: Path) -> dict[str, Any]:
    clean = tmp / "clean"
    clean.mkdir()
    return finish(worker(clean, "start"))


@pytest.mark.slow
@pytest.mark.parametrize("stop_at", ["after-payment", "after-ledger", "in-commit"])
def test_a_killed_worker_loses_no_step_and_pays_exactly_once(tmp_path: Path, stop_at: str) -> None:
    expected = crash_free(tmp_path)
    first = worker(tmp_path, "start", stop_at)
    assert first.stdout is not None
    assert first.stdout.readline().strip() == "stopped", first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)

    result = finish(worker(tmp_path, "resume"))
    assert result == expected  # same final state as a run nobody killed

    payments = sqlite3.connect(tmp_path / "payments.sqlite3")
    assert payments.execute("SELECT count(*), sum(amount) FROM payments").fetchone() == (1, 300)
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        effects = store.effects("crash-run")
        assert [(e.node, e.name) for e in effects] == [("refund", "payment")]
        events = store.events("crash-run")
        assert [e.seq for e in events] == list(range(1, len(events) + 1))  # no gap, no dup
        assert [cp.step for cp in store.checkpoints("crash-run")] == [0, 1, 2]
        starts = [e.node for e in events if e.type == "node_start"]
        assert starts == ["planner", "refund"]  # the killed attempt was never saved
