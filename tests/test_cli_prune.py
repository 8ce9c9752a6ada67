"""``agentnb prune``: old finished runs go, the audit stays, bad input is a usage error."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer, Status
from agentnb.cli import main
from agentnb.examples import build_refund_workflow


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


@pytest.fixture
def db(tmp_path: Path) -> str:
    """One pending refund, one completed, one rejected (with its decision audited)."""
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path) as store:
        wf = build_refund_workflow(store, [])
        wf.start({"requested": 1000}, run_id="pending").run()
        wf.start({"requested": 5}, run_id="done").run()
        wf.start({"requested": 900}, run_id="no").run()
        store.decide("no", "rejected", "ada")
    return str(path)


def test_prune_deletes_finished_runs_older_than_the_age_and_keeps_the_audit(db: str) -> None:
    assert cli("prune", "--db", db, "--older-than", "30d")[1].startswith("no runs (completed")
    code, out = cli("prune", "--db", db, "--older-than", "0s")
    assert code == 0
    assert out.startswith("deleted 2 runs (completed, rejected, failed) that ended before ")
    assert "kept their decision audit (--include-audit deletes it too)" in out
    assert "MiB to the file system" in out
    with SqliteCheckpointer(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["pending"]
        assert [d.run_id for d in store.decisions()] == ["no"]


def test_prune_with_a_status_and_the_audit(db: str) -> None:
    code, out = cli("prune", "--db", db, "--older-than", "0s", "--status", "rejected")
    assert (code, out.splitlines()[0][:36]) == (0, "deleted 1 run (rejected) that ended ")
    code, out = cli("prune", "--db", db, "--older-than", "0s", "--include-audit")
    assert code == 0
    assert "deleted 1 run (completed, rejected, failed)" in out
    assert "deleted their decision audit (1 rows)" in out
    with SqliteCheckpointer(db) as store:
        assert store.get_run("pending").status == Status.PENDING
        assert store.decisions() == []  # with the audit the first prune kept for "no"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "30"], "--older-than '30' cannot be used: give a number and a unit"),
        (["--older-than", "a month"], "give a number and a unit, s, m, h, d or w"),
        (["--older-than", "1d", "--status", "pending"], "pending and approved runs are never"),
        (["--older-than", "1d", "--status", "runing"], "prune takes runs that ended"),
    ],
)
def test_bad_ages_and_statuses_are_usage_errors_and_delete_nothing(
    db: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("prune", "--db", db, *args) == (2, "")
    err = capsys.readouterr().err
    assert message in err
    assert "nothing was deleted" in err
    assert "Traceback" not in err
    with SqliteCheckpointer(db) as store:
        assert len(store.list_runs()) == 3


def test_prune_of_a_missing_database_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli("prune", "--db", str(tmp_path / "nope.sqlite3"), "--older-than", "1d")[0] == 2
    assert "no database at" in capsys.readouterr().err
    assert not (tmp_path / "nope.sqlite3").exists()
