"""The ``agentnb`` command given what a shell can give it — bytes that are not UTF-8, a
path the operating system refuses, JSON nested past reading — or a database the file
system refuses (read-only, damaged, on a full disk): one line on stderr, exit 2, nothing
changed in the database. Never a traceback.

Each case runs the command as a real process, its arguments as bytes (``os.fsencode``),
as a shell would pass them.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentnb.cli import main
from tests.processes import ROOT
from tests.store.faults import dump, prepare, probe, tmpfs

USAGE = 2


def agentnb(*argv: str | bytes) -> tuple[int, str, str]:
    """``python -m agentnb ARGV`` (each argument's bytes as given); exit code, stdout, stderr."""
    done = subprocess.run(
        [sys.executable, "-m", "agentnb", *(os.fsencode(a) for a in argv)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=120,
    )
    decode = lambda b: b.decode("utf-8", "backslashreplace")  # noqa: E731
    return done.returncode, decode(done.stdout), decode(done.stderr)


def one_line(err: str) -> str:
    """The one line of ``err``, with no traceback before it."""
    assert "Traceback" not in err, err
    assert err.endswith("\n"), err
    assert err.count("\n") == 1, err
    return err


@pytest.fixture
def db(tmp_path: Path) -> tuple[str, dict[str, str]]:
    path = tmp_path / "runs.sqlite3"
    return str(path), prepare(path)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["show", b"run-\xff", "--db", "{db}"], "the run id"),
        (["reject", b"\xfe\xff", "--db", "{db}", "--as", "ada"], "the run id"),
        (["approve", "{pending}", "--db", "{db}", "--as", b"ad\xffa"], "--as"),
        (
            ["approve", "{pending}", "--db", "{db}", "--as", "ada", "--comment", b"ok \xe9"],
            "--comment",
        ),
        (["approve", "{pending}", "--db", "{db}", "--as", "ada", "--digest", b"\xff"], "--digest"),
        (["approve", "{pending}", "--db", "{db}", "--as", "ada", "--task", b"t\xff"], "--task"),
        (["respond", "{pending}", "--db", "{db}", "--value", "1", "--as", b"\xc3"], "--as"),
        (["respond", "{pending}", "--db", "{db}", "--value", b'"\xff"', "--as", "ada"], "--value"),
    ],
)
def test_an_argument_that_is_not_utf8_is_one_line_exit_2_and_changes_nothing(
    db: tuple[str, dict[str, str]], argv: list[str | bytes], named: str
) -> None:
    path, ids = db
    before = dump(path)
    args = [a.format(db=path, **ids) if isinstance(a, str) else a for a in argv]
    code, _, err = agentnb(*args)
    assert code == USAGE, err
    assert one_line(err).startswith(f"agentnb {argv[0]}: {named} is not UTF-8 text (byte 0x")
    assert "nothing was changed" in err
    assert dump(path) == before


LONG = "a" * 300 + ".sqlite3"


@pytest.mark.parametrize(
    "argv",
    [  # every way a command checks its file: open_existing, existing_file, the store's open
        ["runs", "--db", "{long}"],
        ["check", "01.1", "--db", "{long}"],
        ["worker", "--db", "{long}", "--workflow", "agentnb.examples:x", "--until-idle"],
        ["validate", "{long}.json"],
        ["draw", "{long}.json", "-o", "x.svg"],
    ],
)
def test_a_file_name_too_long_is_one_line_exit_2(tmp_path: Path, argv: list[str]) -> None:
    code, _, err = agentnb(*(a.format(long=tmp_path / LONG) for a in argv))
    assert code == USAGE, err
    assert "File name too long" in one_line(err)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["runs", "--db", "{dir}"], "is a directory: name a file in it"),
        (["approve", "x", "--db", "{dir}", "--as", "ada"], "is a directory: name a file in it"),
        (["check", "01.1", "--db", "{dir}"], "is a directory: name a file in it"),
        (
            ["worker", "--db", "{dir}", "--workflow", "agentnb.examples:x", "--until-idle"],
            "unable to open database file (it is a directory)",
        ),
        (
            ["worker", "--db", "{dir}/no/such.sqlite3", "--workflow", "x:y", "--until-idle"],
            "unable to open database file (there is no directory ",
        ),
    ],
)
def test_a_db_the_file_system_refuses_says_why_in_one_line_exit_2(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    code, _, err = agentnb(*(a.format(dir=tmp_path) for a in argv))
    assert code == USAGE, err
    assert says in one_line(err)


def test_a_nul_byte_in_db_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No shell can pass a NUL byte (exec's arguments are C strings): only a program calling
    # main(argv) can, so this one runs in the test's process.
    path = f"{tmp_path}/runs\0.sqlite3"
    for argv in (["runs", "--db", path], ["worker", "--db", path, "--workflow", "x:y"]):
        assert main(argv, out=io.StringIO()) == USAGE
        assert "embedded null byte" in one_line(capsys.readouterr().err)
    assert os.listdir(tmp_path) == []


def deep(depth: int = 100_000) -> str:
    """JSON opened deeper than any parser's recursion (one argument stays under the
    kernel's 128 KiB)."""
    return "[" * depth


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["respond", "{pending}", "--db", "{db}", "--value", "{deep}", "--as", "ada"], "--value"),
        (
            [
                *("approve", "{pending}", "--db", "{db}", "--as", "ada"),
                *("--workflow", "agentnb.examples.refund:build_refund_workflow"),
                *("--update", "{deep}"),
            ],
            "--update",
        ),
        (["check", "01.1", "--db", "{db}", "--answer", "{deep}"], "--answer"),
    ],
)
def test_json_nested_too_deeply_to_read_is_one_line_exit_2_and_changes_nothing(
    db: tuple[str, dict[str, str]], argv: list[str], flag: str
) -> None:
    path, ids = db
    before = dump(path)
    code, _, err = agentnb(*(a.format(db=path, deep=deep(), **ids) for a in argv))
    assert code == USAGE, err
    assert f"{flag} nests arrays or objects too deeply to be read" in one_line(err)
    assert dump(path) == before


def test_an_age_older_than_any_date_is_one_line_exit_2_and_deletes_nothing(
    db: tuple[str, dict[str, str]],
) -> None:
    path, _ = db
    before = dump(path)
    code, _, err = agentnb("prune", "--db", path, "--older-than", "9" * 25 + "w")
    assert code == USAGE, err
    assert "no run is that old" in one_line(err)
    assert dump(path) == before


def test_a_postgresql_url_it_cannot_split_is_one_line_exit_2_without_its_password() -> None:
    code, _, err = agentnb("runs", "--db", "postgresql://ada:s3cret@[::1/db")
    assert code == USAGE, err
    assert one_line(err).startswith("agentnb runs: cannot connect to postgresql://ada:***@[::1/db")
    assert "s3cret" not in err


def test_a_damaged_database_is_one_line_exit_2_naming_the_file_and_the_fix(
    db: tuple[str, dict[str, str]],
) -> None:
    from tests.store.test_sqlite_faults import damage

    path, ids = db
    damage(Path(path), "entries")
    before = dump(path, skip=("entries",))
    for argv in (
        ["show", ids["pending"], "--db", path],
        ["approve", ids["pending"], "--db", path, "--as", "ada"],
    ):
        code, _, err = agentnb(*argv)
        assert code == USAGE, err
        line = one_line(err)
        assert line.startswith(f"agentnb {argv[0]}: cannot ")
        assert f" {path}: database disk image is malformed. " in line
        assert "restore the file from a backup" in line
    assert dump(path, skip=("entries",)) == before


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory nobody may reach (pytest's tmp_path is its owner's alone), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="agentnb-cli-faults-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def test_a_read_only_database_is_one_line_exit_2_and_changes_nothing(shared_dir: Path) -> None:
    # Root writes through any file mode: the command runs as nobody (faults.py cli).
    shared_dir.chmod(0o777)
    path = shared_dir / "runs.sqlite3"
    ids = prepare(path)
    path.chmod(0o444)
    before = dump(path)
    for argv in (["approve", ids["pending"], "--db", str(path), "--as", "ada"],):
        done = probe("cli", *argv)
        assert done.returncode == USAGE, done.stderr
        line = one_line(done.stderr)
        assert line.startswith(f"agentnb {argv[0]}: cannot write to {path}: attempt to write a")
        assert "give it write permission" in line
    shown = probe("cli", "show", ids["pending"], "--db", str(path))
    assert shown.returncode == 0, shown.stderr  # reading it needs no write permission
    assert dump(path) == before


@pytest.mark.parametrize(
    ("held", "fails"),
    [
        ("held", "cannot commit to {path}: database or disk is full"),
        ("alone", "cannot open {path}: disk I/O error (the disk holding it has no space left)"),
    ],
)
def test_a_full_disk_is_one_line_exit_2_and_changes_nothing(
    shared_dir: Path, held: str, fails: str
) -> None:
    # held: a worker has the file open (its -shm exists) and the decision's commit fails;
    # alone: the command is the first to open it, and SQLite cannot make its -shm.
    found = probe(
        *("fullcli", str(shared_dir), held),
        *("approve", "{pending}", "--db", "{db}", "--as", "ada"),
        prefix=tmpfs(shared_dir),
    )
    assert json.loads(found.stdout.strip().splitlines()[-1]) == {"code": USAGE, "unchanged": True}
    line = one_line(found.stderr)
    path = f"{shared_dir}/runs.sqlite3"
    assert line.startswith(f"agentnb approve: {fails.format(path=path)}. Free space on the disk")
