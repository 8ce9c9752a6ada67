"""``check``/``grade``: what a student sees, what an autograder gets, what a bad call says."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from agentnb import ExerciseFailed, SqliteCheckpointer, UnknownExercise
from agentnb.cli import main
from agentnb.errors import DefinitionError, StoreError
from agentnb.examples import build_refund_workflow
from agentnb.teach import check, exercise, exercises, grade, lookup, no, ok
from agentnb.teach.registry import _REGISTRY
from tests.teach import scenarios


def _submission(tmp_path: Path, *, reject: bool) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "submission.sqlite3"
    with SqliteCheckpointer(path) as store:
        (scenarios.reject_big if reject else scenarios.approve_big)(store)
    return path


def test_check_prints_a_tick_and_what_was_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check("01.1", db=_submission(tmp_path, reject=True)) is None
    out = capsys.readouterr().out
    assert out.startswith("✓ 01.1 Reject a big refund: run 'big' rejected before")
    assert "only `planner` ran" in out


def test_check_prints_a_cross_what_happened_and_a_hint_never_the_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check("01.1", db=_submission(tmp_path, reject=False))
    out = capsys.readouterr().out
    assert out.startswith("✗ 01.1 Reject a big refund: run 'big' is completed")
    assert "\n  hint: " in out
    assert "(run.reject)" in out  # the concept to use, not a solution to copy


def test_check_strict_raises_exercise_failed_for_an_autograder(tmp_path: Path) -> None:
    with pytest.raises(ExerciseFailed) as failed:
        check("01.1", db=_submission(tmp_path, reject=False), strict=True)
    assert isinstance(failed.value, AssertionError)
    assert not failed.value.result.passed


def test_check_is_strict_while_nbgrader_grades_the_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = _submission(tmp_path, reject=False)
    check("01.1", db=wrong)  # a student's run: a hint, no error
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(ExerciseFailed):
        check("01.1", db=wrong)
    check("01.1", db=_submission(tmp_path / "right", reject=True))  # passes: no error
    check("01.1", db=wrong, strict=False)  # an explicit choice wins


def test_grade_of_one_run_ignores_the_rest_of_the_store() -> None:
    workflow = build_refund_workflow()
    rejected = workflow.start({"requested": 800})
    rejected.run()
    rejected.reject(by="student")
    approved = workflow.start({"requested": 800})
    approved.run()
    approved.approve(by="student")
    approved.run()
    assert grade("01.1", run=rejected)
    assert not grade("01.1", run=approved)
    assert grade("01.1", store=workflow.checkpointer)  # the store as a whole has one


def test_an_unknown_exercise_names_the_closest_ones() -> None:
    with pytest.raises(UnknownExercise) as error:
        grade("2.1")
    assert error.value.exercise_id == "2.1"
    assert "02.1" in error.value.close
    assert "agentnb check --list" in str(error.value)


def test_a_missing_database_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.sqlite3"
    with pytest.raises(StoreError, match="there is no database at"):
        grade("01.1", db=missing)
    assert not missing.exists()


def test_a_notebook_registers_its_own_exercises() -> None:
    @exercise("99.1", "A registered exercise", hint="the concept")
    def _ninety_nine(evidence):  # type: ignore[no-untyped-def]
        runs = evidence.runs()
        return ok("some run") if runs else no("no run")

    try:
        assert lookup("99.1").title == "A registered exercise"
        assert "99.1" in [e.id for e in exercises()]
        result = grade("99.1", store=SqliteCheckpointer(":memory:"))
        assert (result.passed, result.hint) == (False, "the concept")
        with pytest.raises(DefinitionError, match="registered twice"):
            exercise("99.1", "again", hint="x")(lambda evidence: ok("x"))
    finally:
        _REGISTRY.pop("99.1", None)


def test_the_cli_grades_a_submitted_file(tmp_path: Path) -> None:
    good, bad = _submission(tmp_path, reject=True), _submission(tmp_path / "b", reject=False)
    out = io.StringIO()
    assert main(["check", "01.1", "--db", str(good)], out) == 0
    assert out.getvalue().startswith("✓ 01.1")
    out = io.StringIO()
    assert main(["check", "01.1", "--db", str(bad)], out) == 1
    assert out.getvalue().startswith("✗ 01.1")


def test_the_cli_passes_an_answer_and_lists_the_exercises(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    with SqliteCheckpointer(path) as store:
        scenarios.approved_then_completed(store)
    out = io.StringIO()
    answer = '{"step": 2, "next": "refund"}'
    assert main(["check", "02.1", "--db", str(path), "--answer", answer], out) == 0
    listing = io.StringIO()
    assert main(["check", "--list"], listing) == 0
    assert [line.split()[0] for line in listing.getvalue().splitlines()] == [
        e.id for e in exercises()
    ]


def test_the_cli_refuses_bad_json_and_a_missing_file_with_usage(tmp_path: Path) -> None:
    path = _submission(tmp_path, reject=True)
    cli = [sys.executable, "-m", "agentnb.cli", "check", "02.1"]
    bad = subprocess.run([*cli, "--db", str(path), "--answer", "{step"], capture_output=True)
    assert bad.returncode == 2
    assert b"--answer is not JSON" in bad.stderr
    gone = subprocess.run([*cli, "--db", str(tmp_path / "x.sqlite3")], capture_output=True)
    assert gone.returncode == 2
    assert b"no database at" in gone.stderr
