"""``agentnb worker``: claims and drives the runs of the workflows it loads (in-process here;
as real processes in test_worker_processes.py)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer, Status
from agentnb.cli import main
from agentnb.fsm.timers import ManualClock

sys.path.insert(0, str(Path(__file__).parent))
import worker_flows


def test_the_worker_command_drains_the_queue_and_says_what_it_did(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.sqlite3"
    monkeypatch.setenv("AGENTNB_EXEC_LOG", str(tmp_path / "executed.log"))
    with SqliteCheckpointer(db) as store:
        ids = [worker_flows.counted(store).submit({}).run_id for _ in range(3)]
    out = io.StringIO()
    argv = ["worker", "--db", str(db), "--workflow", "worker_flows:counted", "--until-idle"]
    assert main(argv, out) == 0
    assert "counted on" in out.getvalue()
    assert "3 claimed, 3 completed" in out.getvalue()
    with SqliteCheckpointer(db) as store:
        assert {store.get_run(i).status for i in ids} == {Status.COMPLETED}


def test_the_worker_command_fires_a_statecharts_due_timers(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(db) as store:
        worker_flows.light.start("lamp", store=store, clock=ManualClock(0))
    argv = ["worker", "--db", str(db), "--workflow", "worker_flows:light", "--until-idle"]
    assert main(argv, io.StringIO()) == 0
    with SqliteCheckpointer(db) as store:
        assert worker_flows.light.resume("lamp", store=store).state == "off"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon", "must look like MODULE:ATTR"),
        ("no_such_module_here:graph", "no module named 'no_such_module_here'"),
        ("worker_flows:missing", "has no attribute 'missing'"),
        ("worker_flows:LEASE_SECONDS", "is not a StateGraph, a Workflow"),
    ],
)
def test_a_workflow_the_worker_cannot_load_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    argv = ["worker", "--db", str(tmp_path / "runs.sqlite3"), "--workflow", target]
    assert main(argv, io.StringIO()) == 2
    assert message in capsys.readouterr().err


def test_a_concurrency_below_one_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["worker", "--db", str(tmp_path / "r.sqlite3"), "--workflow", "worker_flows:counted"]
    assert main([*argv, "--concurrency", "0"], io.StringIO()) == 2
    assert "--concurrency must be 1 or more" in capsys.readouterr().err


def test_the_worker_command_never_prints_the_servers_password(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from urllib.parse import urlsplit

    from agentnb import PostgresCheckpointer

    password = urlsplit(pg_dsn).password
    assert password  # the test servers ask for one over TCP
    monkeypatch.setenv("AGENTNB_EXEC_LOG", str(tmp_path / "executed.log"))
    with PostgresCheckpointer(pg_dsn) as store:
        worker_flows.counted(store).submit({})
    out = io.StringIO()
    argv = ["worker", "--db", pg_dsn, "--workflow", "worker_flows:counted", "--until-idle"]
    assert main(argv, out) == 0
    assert "1 claimed, 1 completed" in out.getvalue()
    assert password not in out.getvalue()
    assert ":***@" in out.getvalue()
