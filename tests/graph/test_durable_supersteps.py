"""A superstep's finished tasks survive a SIGKILL: resuming runs only the unfinished ones."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer
from tests.processes import python

WORKER = Path(__file__).with_name("branch_worker.py")


def worker(tmp: Path, command: str) -> subprocess.Popen[str]:
    args = [str(tmp / "runs.sqlite3"), str(tmp / "ledger.sqlite3"), "branches", command]
    return python(WORKER, *args)


@pytest.mark.slow
def test_a_killed_superstep_resumes_with_only_its_unfinished_tasks(tmp_path: Path) -> None:
    first = worker(tmp_path, "start")
    assert first.stdout is not None
    line = first.stdout.readline().strip()  # blocks until b1's result is durable
    assert line == "saved b1", first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)

    second = worker(tmp_path, "resume")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    stepped, final = (json.loads(line) for line in out.strip().splitlines()[-2:])
    assert stepped == {"tasks": ["b2", "b3"], "recovered": ["b1"]}
    assert final["status"] == "completed"
    assert final["state"]["count"] == 3

    ledger = sqlite3.connect(tmp_path / "ledger.sqlite3")
    calls = dict(ledger.execute("SELECT node, count(*) FROM calls GROUP BY node").fetchall())
    assert calls == {"a": 1, "b1": 1, "b2": 2, "b3": 2}  # b1 never ran again
    charges = [k for (k,) in ledger.execute("SELECT key FROM charges ORDER BY key")]
    assert charges == [f"branches:1:{b}" for b in ("b1", "b2", "b3")]  # each paid once
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        events = store.events("branches")
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert store.pending_writes("branches", 1) == []  # merged, so cleared
        assert [cp.step for cp in store.checkpoints("branches")] == [0, 1, 2, 3]
