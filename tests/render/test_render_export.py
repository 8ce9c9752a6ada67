"""draw() to files, and ``agentnb draw MODULE:ATTR OUTPUT`` with one-line errors."""

from __future__ import annotations

import io
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from render_graphs import FakeRun, compiled, parse_svg, refund_graph

from agentnb.errors import MissingDependency, RenderError
from agentnb.render.dot import to_dot
from agentnb.render.export import cli_draw, draw
from agentnb.render.extract import diagram_from_graph

REFUND_MODULE = """
from agentnb.graph.builder import END, StateGraph

def build():
    g = StateGraph("refund")
    g.add_node("planner", lambda s: None)
    g.add_node("refund", lambda s: None)
    g.set_entry_point("planner")
    g.add_edge("planner", "refund")
    g.add_edge("refund", END)
    return g

graph = build()
workflow = graph.compile(checkpointer=object())
not_a_graph = 42

def broken():
    raise RuntimeError("no database")

class Holder:
    inner = graph
"""


def _hide_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)


@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf", ".dot", ".gv"])
def test_draw_writes_the_format_its_suffix_names(tmp_path: Path, suffix: str) -> None:
    path = draw(compiled(refund_graph()), tmp_path / f"refund{suffix}")
    data = path.read_bytes()
    start = {".svg": b"<?xml", ".png": b"\x89PNG", ".pdf": b"%PDF", ".dot": b"digraph"}
    assert data.startswith(start.get(suffix, b"digraph"))


def test_draw_svg_of_a_run_shows_the_overlay(tmp_path: Path) -> None:
    path = draw(FakeRun(compiled(refund_graph())), tmp_path / "run.svg", direction="TB")
    drawn = parse_svg(path.read_text(encoding="utf-8"))
    assert "is-pending" in drawn.nodes["human_approval"][1]


def test_dot_export_needs_no_graphviz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_dot(monkeypatch)
    path = draw(refund_graph(), tmp_path / "refund.dot")
    assert path.read_text(encoding="utf-8") == to_dot(diagram_from_graph(refund_graph()))
    with pytest.raises(MissingDependency, match="Graphviz"):
        draw(refund_graph(), tmp_path / "refund.svg")
    assert not (tmp_path / "refund.svg").exists()


def test_draw_refuses_an_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"\.svg, \.png"):
        draw(refund_graph(), tmp_path / "refund.jpeg")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], str]]:
    """Write modules into a fresh cwd; returns a function ``source -> module name``."""
    monkeypatch.chdir(tmp_path)
    written: list[str] = []

    def write(source: str) -> str:
        name = f"flows_{tmp_path.name}_{len(written)}".replace("-", "_")
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def _cli(target: str, output: str, **kwargs: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_draw(target, output, stdout=out, stderr=err, **kwargs)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("attr", ["graph", "workflow", "build", "Holder.inner"])
def test_cli_draws_a_graph_workflow_or_factory(
    project: Callable[[str], str], tmp_path: Path, attr: str
) -> None:
    module = project(REFUND_MODULE)
    code, out, err = _cli(f"{module}:{attr}", "out.svg", direction="TB")
    assert (code, err) == (0, "")
    assert out == "wrote out.svg\n"
    assert set(parse_svg((tmp_path / "out.svg").read_text(encoding="utf-8")).nodes) == {
        "START",
        "planner",
        "refund",
        "END",
    }


def test_cli_prints_dot_for_dash(project: Callable[[str], str]) -> None:
    code, out, _ = _cli(f"{project(REFUND_MODULE)}:graph", "-")
    assert code == 0
    assert out.startswith("digraph agentnb {")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nocolon", "target must look like MODULE:ATTR"),
        (":graph", "target must look like MODULE:ATTR"),
        ("mod:", "target must look like MODULE:ATTR"),
        ("bad-name:graph", "target must look like MODULE:ATTR"),
        ("surely_not_a_module_xyz:graph", "no module named 'surely_not_a_module_xyz'"),
        ("{m}:missing", "has no attribute 'missing' (it has: graph, workflow)"),
        ("{m}:Holder.nope", ".Holder' has no attribute 'nope'"),
        ("{m}:not_a_graph", "is a int, not a StateGraph or Workflow"),
        ("{m}:broken", "calling {m}:broken() failed: RuntimeError: no database"),
    ],
)
def test_cli_mistakes_exit_2_with_one_line(
    project: Callable[[str], str], target: str, message: str
) -> None:
    module = project(REFUND_MODULE)
    code, out, err = _cli(target.format(m=module), "out.svg")
    assert (code, out) == (2, "")
    assert err.startswith("agentnb draw: error: ")
    assert message.format(m=module) in err
    assert err.count("\n") == 1  # one line, no traceback


def test_cli_reports_a_module_that_fails_to_import(project: Callable[[str], str]) -> None:
    raising = project("raise ValueError('bad config')\n")
    code, _, err = _cli(f"{raising}:graph", "out.svg")
    assert code == 2
    assert f"importing '{raising}' failed: ValueError: bad config" in err
    needs = project("import surely_missing_dependency_xyz\n")
    code, _, err = _cli(f"{needs}:graph", "out.svg")
    assert code == 2
    assert "No module named 'surely_missing_dependency_xyz'" in err


def test_cli_refuses_bad_output_and_direction(project: Callable[[str], str]) -> None:
    module = project(REFUND_MODULE)
    assert _cli(f"{module}:graph", "out.jpeg")[0] == 2
    code, _, err = _cli(f"{module}:graph", "out.svg", direction="RL")
    assert code == 2
    assert "direction must be LR or TB" in err


def test_cli_without_graphviz_exits_1_with_the_install_hint(
    project: Callable[[str], str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    module = project(REFUND_MODULE)
    _hide_dot(monkeypatch)
    code, _, err = _cli(f"{module}:graph", "out.png")
    assert code == 1
    assert "apt-get install graphviz" in err
    assert _cli(f"{module}:graph", "out.dot")[0] == 0
    assert (tmp_path / "out.dot").read_text(encoding="utf-8").startswith("digraph")


def test_cli_leaves_sys_path_as_it_was(project: Callable[[str], str]) -> None:
    before = list(sys.path)
    _cli(f"{project(REFUND_MODULE)}:graph", "-")
    assert sys.path == before
