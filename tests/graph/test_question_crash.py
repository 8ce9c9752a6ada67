"""A worker killed between the answer to a question and the node's end: resuming replays
the recorded answer and the recorded side effect; nothing is asked or paid twice."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer
from tests.processes import finished as finish
from tests.processes import python

WORKER = Path(__file__).with_name("question_worker.py")


def worker(tmp: Path, *args: str) -> subprocess.Popen[str]:
    return python(WORKER, str(tmp / "runs.sqlite3"), str(tmp / "ledger.sqlite3"), *args)


@pytest.mark.slow
def test_a_kill_after_the_answer_replays_it_and_pays_once(tmp_path: Path) -> None:
    assert finish(worker(tmp_path, "start"))["status"] == "pending"
    assert finish(worker(tmp_path, "respond"))["status"] == "approved"
    killed = worker(tmp_path, "resume", "stop")
    assert killed.stdout is not None
    assert killed.stdout.readline().strip() == "stopped"
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)

    result = finish(worker(tmp_path, "resume"))
    assert result == {"status": "completed", "state": {"receipt": "charged", "amount": 42}}
    ledger = sqlite3.connect(tmp_path / "ledger.sqlite3")
    assert ledger.execute("SELECT count(*) FROM calls").fetchone() == (3,)  # ran from its start
    assert ledger.execute("SELECT count(*) FROM charges").fetchone() == (1,)  # paid once
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        decisions = store.decisions("question-run")
        assert [(d.accepted, d.edit) for d in decisions] == [(True, {"answer": 42})]
        asked = [e for e in store.events("question-run") if e.type == "interrupted"]
        assert len(asked) == 1  # asked once
