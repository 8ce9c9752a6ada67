"""The ``agentnb`` command: output, exit codes (0 ok, 1 refused, 2 usage), no tracebacks."""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentnb import Checkpointer, PostgresCheckpointer, SqliteCheckpointer, StateGraph, Status
from agentnb.cli import main
from agentnb.examples import build_refund_workflow


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def opened(db: str) -> Checkpointer:
    if db.startswith("postgresql://"):
        return PostgresCheckpointer(db)
    return SqliteCheckpointer(db)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str, str]:
    """A database with one pending run and one completed run: a SQLite file, or a
    PostgreSQL URL (``--db postgresql://...``)."""
    path = str(tmp_path / "runs.sqlite3")
    if request.param == "postgres":
        path = request.getfixturevalue("pg_dsn")
    with opened(path) as store:
        wf = build_refund_workflow(store)
        pending = wf.start({"requested": 1000})
        pending.run()
        done = wf.start({"requested": 5})
        done.run()
    return path, pending.run_id, done.run_id


def test_demo_walks_through_pause_restart_approval_duplicate_and_rejection(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = cli("demo")
    assert code == 0
    assert "paused before 'human_approval'" in out
    assert "refused: ApprovalNotPending" in out
    assert "-> rejected; simulated refunds: [1000]" in out
    assert out.rstrip().endswith("Simulated refunds: [1000]")
    assert "Traceback" not in out + capsys.readouterr().err


def test_runs_lists_and_filters(db: tuple[str, str, str]) -> None:
    path, pending, done = db
    code, out = cli("runs", "--db", path)
    assert code == 0
    assert pending in out
    assert done in out
    code, out = cli("runs", "--db", path, "--status", "pending")
    assert code == 0
    assert pending in out
    assert done not in out
    assert cli("runs", "--db", path, "--status", "failed") == (0, "no runs with status failed\n")


def test_show_prints_status_events_state_and_json(db: tuple[str, str, str]) -> None:
    path, pending, _ = db
    code, out = cli("show", pending, "--db", path)
    assert code == 0
    assert "pending: waiting for a decision before 'human_approval'" in out
    assert "interrupted" in out
    assert '"amount": 1000' in out
    code, out = cli("show", pending, "--db", path, "--json")
    data = json.loads(out)
    assert data["status"] == "pending"
    assert [e["type"] for e in data["events"]][-1] == "interrupted"


def test_approve_records_a_decision_that_a_worker_then_continues(
    db: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, pending, _ = db
    code, out = cli("approve", pending, "--db", path, "--as", "ada", "--comment", "fine")
    assert code == 0
    assert "waiting for a worker with the workflow code" in out
    code, _ = cli("approve", pending, "--db", path, "--as", "bob")
    assert code == 1
    assert "refused" in capsys.readouterr().err
    refunds: list[int] = []
    with opened(path) as store:
        run = build_refund_workflow(store, refunds).attach(pending)
        assert run.status == Status.APPROVED
        run.run()
        assert run.status == Status.COMPLETED
        assert [(d.approver, d.accepted) for d in store.decisions(pending)] == [
            ("ada", True),
            ("bob", False),
        ]
    assert refunds == [1000]


def test_reject_with_a_stale_digest_is_refused(
    db: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, pending, _ = db
    code, _ = cli("reject", pending, "--db", path, "--as", "ada", "--digest", "abc")
    assert code == 1
    assert "changed since it was shown" in capsys.readouterr().err
    code, out = cli("reject", pending, "--db", path, "--as", "ada")
    assert code == 0
    assert "status: rejected" in out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["show", "nope", "--db", "{db}"], 1, "no run 'nope'"),
        (["approve", "nope", "--db", "{db}", "--as", "x"], 1, "no run 'nope'"),
        (["runs", "--db", "{missing}"], 2, "no database at"),
        (["runs", "--db", "{db}", "--status", "weird"], 2, "is not a status"),
        (["approve", "x", "--db", "{db}"], 2, "--as"),
        (["frobnicate"], 2, "invalid choice"),
        ([], 2, "required"),
    ],
)
def test_mistakes_give_a_message_and_an_exit_code_never_a_traceback(
    db: tuple[str, str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    code: int,
    message: str,
) -> None:
    args = [a.format(db=db[0], missing=tmp_path / "missing.sqlite3") for a in argv]
    assert cli(*args)[0] == code
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_the_console_script_runs_as_a_module() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agentnb.cli", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0
    assert out.stdout.startswith("agentnb ")


def agentnb_command(how: str, *argv: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("agentnb")
    command = [sys.executable, "-m", "agentnb"] if how == "module" else [str(script)]
    return subprocess.run([*command, *argv], capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_python_dash_m_agentnb_behaves_as_the_agentnb_command(
    db: tuple[str, str, str], tmp_path: Path
) -> None:
    path, pending, done = db
    missing = str(tmp_path / "missing.sqlite3")
    for argv in (
        ["runs", "--db", path],
        ["show", done, "--db", path, "--json"],
        ["runs", "--db", missing],  # usage: exit 2
        ["approve", done, "--db", path, "--as", "ada"],  # refused: exit 1
        [],  # no command: argparse's usage, exit 2
    ):
        module = agentnb_command("module", *argv)
        script = agentnb_command("script", *argv)
        assert (module.returncode, module.stdout, module.stderr) == (
            script.returncode,
            script.stdout,
            script.stderr,
        ), argv
    assert [agentnb_command("module", *a).returncode for a in ([], ["runs", "--db", missing])] == [
        2,
        2,
    ]
    decided = agentnb_command("module", "approve", pending, "--db", path, "--as", "ada")
    assert decided.returncode == 0, decided.stderr
    assert f"approved run {pending}" in decided.stdout
    with opened(path) as store:
        assert store.get_run(pending).status == Status.APPROVED


def test_an_unreachable_postgresql_url_is_a_store_error_with_the_fix_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens on it once the socket is closed
    code, _ = cli("runs", "--db", f"postgresql://u:secret@127.0.0.1:{port}/db")
    err = capsys.readouterr().err
    assert code != 0
    assert "cannot connect to postgresql://u:***@127.0.0.1" in err
    assert "check that the server is running" in err
    assert "secret" not in err
    assert "Traceback" not in err


def test_validate_lists_every_problem_and_exits_1(tmp_path: Path) -> None:
    good = tmp_path / "light.json"
    good.write_text(
        json.dumps(
            {
                "name": "light",
                "states": ["red", "green"],
                "initial": "red",
                "transitions": [
                    {"source": "red", "event": "go", "target": "green"},
                    {"source": "green", "event": "stop", "target": "red"},
                ],
            }
        )
    )
    assert cli("validate", str(good)) == (0, f"{good}: valid\n")
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "name": "light",
                "states": ["red"],
                "initial": "blue",
                "transitions": [{"source": "red", "event": "go", "target": "nowhere"}],
            }
        )
    )
    code, out = cli("validate", str(bad))
    assert code == 1
    assert "2 problems" in out
    assert "$.initial" in out
    assert "$.transitions[0].target" in out


def test_validate_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    assert cli("validate", str(tmp_path / "none.json"))[0] == 2


def test_validate_and_draw_read_workflow_files_too(tmp_path: Path) -> None:
    source = Path(__file__).parent / "graph" / "data" / "refund.yaml"
    assert cli("validate", str(source)) == (0, f"{source}: valid\n")
    out = tmp_path / "refund.dot"
    code, _ = cli("draw", str(source), "-o", str(out))
    assert code == 0
    assert "human_approval" in out.read_text()


def test_runs_lists_a_subgraphs_run_under_its_parent(tmp_path: Path) -> None:
    from agentnb import StateGraph

    inner = StateGraph("inner").add_node("look", lambda s: {"seen": True}).set_entry_point("look")
    outer = StateGraph("outer").add_node("research", inner).set_entry_point("research")
    path = tmp_path / "tree.sqlite3"
    with SqliteCheckpointer(path) as store:
        outer.compile(store).start({}, run_id="top").run()
    code, text = cli("runs", "--db", str(path))
    assert code == 0
    lines = text.splitlines()[1:]
    assert lines[0].startswith("top ")
    assert lines[1].startswith("  └ research@0 ")
    assert "inner" in lines[1]
    assert "completed" in lines[1]


@pytest.mark.slow
def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """``agentnb runs --db F | head -1``: the closed pipe is no error and no traceback."""
    db = tmp_path / "many.sqlite3"
    with SqliteCheckpointer(db) as store:
        g = StateGraph("many").add_node("a", lambda s: None).set_entry_point("a")
        wf = g.compile(store)
        for _ in range(3000):  # far more than a pipe's buffer holds
            wf.submit({})
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentnb", "runs", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    assert proc.stdout.readline()  # the first line, then the reader goes away
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err
    assert "BrokenPipe" not in err
