"""Separate processes on one file: the CLI is bound by the approver policy stored with
each run, and refuses a policy only the workflow's code can check. Who each process is
comes from JUPYTERHUB_USER in its environment, as inside JupyterHub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer, Status

TESTS = Path(__file__).parent
ROOT = TESTS.parent


def process(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "JUPYTERHUB_USER": user, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=120
    )


def worker(user: str, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return process(user, str(TESTS / "approver_worker.py"), str(db), *args)


def agentnb(user: str, *args: str) -> subprocess.CompletedProcess[str]:
    return process(user, "-m", "agentnb.cli", *args)


def status(db: Path, run_id: str) -> Status:
    with SqliteCheckpointer(db) as store:
        return store.get_run(run_id).status


@pytest.mark.slow
def test_the_cli_is_bound_by_the_stored_approvers_and_separate_duties(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    started = worker("ada", db, "start", "members")
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()

    typed = agentnb("mallory", "approve", run_id, "--db", str(db), "--as", "bob")
    assert typed.returncode == 1
    assert "refused: 'mallory' may not decide" in typed.stderr
    assert "mallory is not among the approvers of before:refund (ada, bob)" in typed.stderr
    assert "Traceback" not in typed.stderr
    starter = agentnb("ada", "reject", run_id, "--db", str(db), "--as", "ada")
    assert starter.returncode == 1
    assert "separate duties: ada started the run" in starter.stderr
    assert status(db, run_id) == Status.PENDING

    approved = agentnb("bob", "approve", run_id, "--db", str(db), "--as", "Robert")
    assert approved.returncode == 0, approved.stderr
    assert "as Robert (identity bob (jupyterhub))" in approved.stdout
    assert status(db, run_id) == Status.APPROVED

    shown = agentnb("eve", "show", run_id, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "started  by ada (jupyterhub)" in shown.stdout
    assert "policy   before:refund: approvers ada, bob; separate duties" in shown.stdout
    lines = [line for line in shown.stdout.splitlines() if " by " in line and "(identity" in line]
    assert [line.strip().split(" ", 1)[1] for line in lines] == [
        "approved by bob (identity mallory (jupyterhub)): refused (not authorized: mallory is "
        "not among the approvers of before:refund (ada, bob))",
        "rejected by ada (identity ada (jupyterhub)): refused (not authorized: separate "
        "duties: ada started the run (before:refund))",
        "approved by Robert (identity bob (jupyterhub)): accepted",
    ]
    as_json = json.loads(agentnb("eve", "show", run_id, "--db", str(db), "--json").stdout)
    assert [(d["by"], d["identity"]["name"], d["accepted"]) for d in as_json["decisions"]] == [
        ("bob", "mallory", False),
        ("ada", "ada", False),
        ("Robert", "bob", True),
    ]
    assert as_json["approvers"]["before:refund"]["approvers"] == ["ada", "bob"]


@pytest.mark.slow
def test_the_cli_refuses_a_callable_policy_that_the_workflows_process_then_checks(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite3"
    run_id = worker("ada", db, "start", "callable").stdout.strip()

    cli = agentnb("bob", "approve", run_id, "--db", str(db), "--as", "bob")
    assert cli.returncode == 1
    assert "decide it from a process that loaded the workflow" in cli.stderr
    assert "finance_over_500'" in cli.stderr  # the name stored when the run started
    assert status(db, run_id) == Status.PENDING

    refused = worker("mallory", db, "approve", "callable", run_id, "bob")
    assert refused.returncode == 1
    assert refused.stdout.startswith("NotAuthorized:")
    assert "finance_over_500 refused mallory" in refused.stdout
    accepted = worker("bob", db, "approve", "callable", run_id, "Bob B.")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert accepted.stdout.strip() == "approved as Bob B. (identity bob (jupyterhub))"
    assert status(db, run_id) == Status.APPROVED

    with SqliteCheckpointer(db) as store:
        audit = [
            (d.identity.name if d.identity else None, d.accepted, d.reason)
            for d in store.decisions(run_id)
        ]
    assert audit[0][:2] == ("bob", False)
    assert (audit[0][2] or "").startswith("policy unavailable: policy ")
    assert audit[1][:2] == ("mallory", False)
    assert audit[2] == ("bob", True, None)


@pytest.mark.slow
def test_the_cli_given_the_workflow_checks_its_callable_policy_itself(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    run_id = worker("ada", db, "start", "callable").stdout.strip()
    code = ["--workflow", "tests.approver_worker:callable_graph"]
    refused = agentnb("mallory", "approve", run_id, "--db", str(db), "--as", "m", *code)
    assert refused.returncode == 1
    assert "finance_over_500 refused mallory" in refused.stderr  # checked, not unavailable
    approved = agentnb("bob", "approve", run_id, "--db", str(db), "--as", "bob", *code)
    assert approved.returncode == 0, approved.stderr
    assert status(db, run_id) == Status.APPROVED
    wrong = agentnb("bob", "approve", run_id, "--db", str(db), "--as", "bob", "--workflow", "x")
    assert wrong.returncode == 2
    assert "MODULE:ATTR" in wrong.stderr
