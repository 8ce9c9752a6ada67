"""The teaching notebooks: outputs committed, no widget state stored, no network used, and
a course a teacher can adopt — goals up front, self-checked exercises at the end, worked
solutions beside them.

Their outputs are compared by nbval in ``make test``, with every kernel kept offline
(tests/offline.py); these tests check what nbval cannot.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agentnb.teach import exercises
from tests.kernels import ipc_config

HERE = Path(__file__).parents[1] / "notebooks"
# Notebooks not yet written as course material — no goals header, no registered exercises
# (agentnb.teach.course), no solutions: named here, so the gap is visible rather than
# hidden. A notebook leaves this list with its checkers and its solutions notebook.
NOT_YET_CHECKED: set[str] = set()
COURSE = sorted(HERE.glob("*.ipynb"))
SOLUTIONS = sorted((HERE / "solutions").glob("*.ipynb"))
NOTEBOOKS = COURSE + SOLUTIONS
TAUGHT = [p for p in COURSE if p.stem not in NOT_YET_CHECKED] + SOLUTIONS
NAME = {p: p.relative_to(HERE).as_posix() for p in NOTEBOOKS}

# The capstone's check lives at the end of the last notebook.
HOME = {"capstone": "09-agent-loop"}


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _role(cell: nbformat.NotebookNode) -> tuple[str, str] | None:
    meta = cell.metadata.get("agentnb")
    return (meta["exercise"], meta["role"]) if meta else None


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def _checks(path: Path) -> dict[str, str]:
    """exercise id -> the printed verdict of its check cell."""
    cells = _read(path).cells
    return {r[0]: _text(c) for c in cells if (r := _role(c)) and r[1] == "check"}


def _client(notebook: nbformat.NotebookNode, path: Path) -> NotebookClient:
    return NotebookClient(
        notebook,
        config=ipc_config(),
        kernel_name="python3",
        timeout=60,  # a hang guard, not a speed check
        resources={"metadata": {"path": str(path.parent)}},
        store_widget_state=False,
    )


def test_there_are_notebooks_and_each_has_its_solutions() -> None:
    assert COURSE
    assert [p.name for p in SOLUTIONS] == [p.name for p in COURSE if p.stem not in NOT_YET_CHECKED]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAME.get)
def test_a_notebook_has_committed_outputs_and_no_widget_state(path: Path) -> None:
    notebook = _read(path)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert any(c.outputs for c in code), f"{path.name} has no committed outputs"
    assert all(c.execution_count is not None for c in code), f"{path.name}: unexecuted cells"
    assert "widgets" not in notebook.metadata
    assert path.stat().st_size < 1_000_000
    assert notebook.cells[-1].cell_type == "markdown"


@pytest.mark.parametrize("path", TAUGHT, ids=NAME.get)
def test_a_notebook_opens_with_goals_prerequisites_and_time(path: Path) -> None:
    first = _read(path).cells[0]
    assert first.cell_type == "markdown"
    for heading in ("**Goals.**", "**Prerequisites.**", "**Time.**"):
        assert heading in first.source, f"{path.name}: no {heading} in the first cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAME.get)
def test_a_diagram_is_drawn_only_where_the_cell_is_meant_to_draw_it(path: Path) -> None:
    # nbval compares an SVG exactly, and it changes with the Graphviz build; a diagram in
    # an unmarked cell is also the symptom of a builder call returning the graph by accident.
    for i, cell in enumerate(_read(path).cells):
        drawn = any("image/svg+xml" in o.get("data", {}) for o in cell.get("outputs", []))
        if drawn:
            assert "nbval-ignore-output" in cell.metadata.get("tags", []), f"{path.name}[{i}]"


def test_every_exercise_has_a_check_cell_in_its_notebook() -> None:
    for found in exercises():
        stem = HOME.get(found.notebook, found.notebook)
        path = HERE / f"{stem}.ipynb"
        assert path in COURSE, f"{found.id}: no notebook {stem}"
        cells = [c for c in _read(path).cells if _role(c) == (found.id, "check")]
        assert len(cells) == 1, f"{found.id}: {len(cells)} check cells in {stem}"
        assert f'check("{found.id}"' in cells[0].source


@pytest.mark.parametrize("path", TAUGHT, ids=NAME.get)
def test_a_notebook_ends_with_self_checked_exercises(path: Path) -> None:
    cells = _read(path).cells
    headings = [i for i, c in enumerate(cells) if re.search(r"^## Exercises", c.source, re.M)]
    checks = [i for i, c in enumerate(cells) if (r := _role(c)) and r[1] == "check"]
    assert headings, f"{path.name}: no '## Exercises' section"
    assert checks, f"{path.name}: no check cell"
    assert min(checks) > headings[-1]


@pytest.mark.parametrize("path", [p for p in TAUGHT if p not in SOLUTIONS], ids=NAME.get)
def test_the_notebooks_own_demos_do_not_pass_its_exercises(path: Path) -> None:
    # The committed course notebook has the starters, not the solutions: every check must
    # say what is missing. A checker the demos satisfy would grade nothing.
    for exercise_id, verdict in _checks(path).items():
        assert verdict.startswith(f"✗ {exercise_id} "), verdict
        assert "\n  hint: " in verdict


@pytest.mark.parametrize("path", SOLUTIONS, ids=NAME.get)
def test_the_worked_solutions_pass_every_check(path: Path) -> None:
    verdicts = _checks(path)
    assert verdicts
    for exercise_id, verdict in verdicts.items():
        assert verdict.startswith(f"✓ {exercise_id} "), verdict


@pytest.mark.parametrize("path", SOLUTIONS, ids=NAME.get)
def test_a_solutions_notebook_is_its_notebook_with_the_solutions_filled_in(path: Path) -> None:
    course, solved = _read(HERE / path.name).cells, _read(path).cells
    assert len(course) == len(solved)
    for mine, theirs in zip(course, solved, strict=True):
        assert _role(mine) == _role(theirs)
        if _role(mine) and _role(mine)[1] == "solution":  # type: ignore[index]
            assert theirs.source.startswith("### BEGIN SOLUTION\n")
            assert theirs.source.endswith("\n### END SOLUTION")
        else:
            assert mine.source == theirs.source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=NAME.get)
def test_exercise_cells_carry_nbgrader_metadata(path: Path) -> None:
    ids = []
    for cell in _read(path).cells:
        role = _role(cell)
        if role is None:
            assert "nbgrader" not in cell.metadata
            continue
        grader = cell.metadata["nbgrader"]
        ids.append(grader["grade_id"])
        assert grader["grade_id"] == f"ex-{role[0].replace('.', '-')}-{role[1]}"
        assert re.fullmatch(r"[a-zA-Z0-9_\-]+", grader["grade_id"])  # nbgrader's pattern
        assert grader["schema_version"] == 3
        if role[1] == "check":  # an autograder test: locked, worth a point
            assert (grader["grade"], grader["locked"], grader["points"]) == (True, True, 1)
        else:
            assert (grader["solution"], grader["grade"], grader["locked"]) == (True, False, False)
    assert len(ids) == len(set(ids))


def test_the_notebooks_keep_their_databases_in_a_git_ignored_runs_folder() -> None:
    assert "runs/" in (HERE.parent / ".gitignore").read_text().splitlines()
    for path in TAUGHT:
        source = "\n".join(c.source for c in _read(path).cells)
        assert 'Path("runs")' in source, path.name
        assert not re.search(r"SqliteCheckpointer\(workdir", source), path.name


def test_the_reviewed_errata_stay_fixed() -> None:
    def source(stem: str) -> str:
        return "\n".join(c.source for c in _read(HERE / f"{stem}.ipynb").cells)

    quick, approval, machines = (
        source("01-quickstart"),
        source("02-human-approval"),
        source("03-state-machines"),
    )
    assert "**`messages`" in quick
    assert "appends" in quick
    assert "seed article" not in approval
    assert '"0" * 64' not in approval  # the stale approval uses a digest someone really saw
    assert "mkdtemp" not in approval
    assert not re.search(r"decide\([^)]*\{\}, None\)", machines)  # no bare positional args
    for taught in ("on_enter(", "on_exit(", "final=[", "event_id=", ".resume(", ".view()"):
        assert taught in machines, taught
    reliability = source("04-reliability")
    assert "%%writefile" in reliability
    assert "textwrap" not in reliability
    assert "fork(0" in reliability  # the fork that re-routes, beside the one that cannot
    for path in NOTEBOOKS:
        assert 'payload["cause"]' not in "\n".join(c.source for c in _read(path).cells)


@pytest.mark.slow
def test_the_approval_notebook_survives_a_real_kernel_restart() -> None:
    path = HERE / "02-human-approval.ipynb"
    notebook = _read(path)
    restart = next(
        i for i, c in enumerate(notebook.cells) if c.source.startswith("# Runs on its own after")
    )
    before = nbformat.v4.new_notebook(cells=notebook.cells[:restart])
    _client(before, path).execute()  # the first kernel: pauses refund-700, then it is gone
    after = nbformat.v4.new_notebook(cells=[notebook.cells[restart]])
    _client(after, path).execute()  # a new kernel runs the restart cell alone
    assert _text(after.cells[0]).startswith("pending before human_approval | amount: 700")


@pytest.mark.parametrize("target", ["nbval", "suite"])
def test_make_nbval_runs_the_notebooks_offline(target: str) -> None:
    # The run that compares the outputs is the one that proves no request leaves the
    # machine: tests/offline.py guards each of its kernels (tested below). make test runs
    # the notebooks in its one session (suite); make nbval runs them alone.
    printed = subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.replace("\\\n", " ")  # a recipe line continued with a backslash
    (pytest_line,) = [line for line in printed.splitlines() if "--nbval" in line]
    assert "-p tests.offline" in pytest_line
    assert "notebooks/*.ipynb notebooks/solutions/*.ipynb" in pytest_line


def _nbval(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "probe.ipynb"
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="done\n")]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    pytest_args = ["-p", "no:cacheprovider", "-q", "--nbval", "-p", "tests.offline"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args, "--rootdir", str(tmp_path), str(path)],
        cwd=HERE.parent,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.mark.slow
def test_a_notebook_that_reaches_out_fails_under_the_guard_even_if_it_swallows_the_error(
    tmp_path: Path,
) -> None:
    reaching = _nbval(
        tmp_path,
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('192.0.2.1', 80), timeout=0.2)\n"
        "except OSError:\n"
        "    pass\n"
        "with socket.socket() as s:\n"  # the machine itself is allowed
        "    s.bind(('127.0.0.1', 0))\n"
        "    s.listen()\n"
        "    socket.create_connection(s.getsockname()).close()\n"
        "print('done')",
    )
    assert reaching.returncode == 1, reaching.stdout
    assert "tried to reach the network (refused): lookup 192.0.2.1" in reaching.stdout
    assert "1 failed" in reaching.stdout


@pytest.mark.slow
def test_the_scale_out_notebook_leaves_no_worker_or_server_behind() -> None:
    path = HERE / "08-scale-out.ipynb"
    notebook = _read(path)
    notebook.cells.append(
        nbformat.v4.new_code_cell(
            "import json; print(json.dumps({'pids': [p.pid for p in started], "
            "'server': None if server is None else str(server.root)}))"
        )
    )
    _client(notebook, path).execute()
    left = json.loads(notebook.cells[-1].outputs[0]["text"])
    assert len(left["pids"]) == 2  # the demo's two workers (the exercises are not done)
    for pid in left["pids"]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    if left["server"] is not None:
        assert not Path(left["server"]).exists()
