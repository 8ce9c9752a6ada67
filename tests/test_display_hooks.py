"""StateGraph, Workflow and Run draw themselves: notebook bundles, files, the CLI."""

from __future__ import annotations

import html
import io
import textwrap
from pathlib import Path

import pytest

from agentnb.cli import main
from agentnb.examples import build_refund_graph, build_refund_workflow


def test_graph_workflow_and_run_show_as_svg_with_a_text_summary() -> None:
    graph = build_refund_graph()
    workflow = graph.compile()
    run = workflow.start({})
    run.run()
    for obj in (graph, workflow, run):
        bundle = obj._repr_mimebundle_()
        assert bundle["image/svg+xml"].lstrip().startswith(("<?xml", "<svg"))
        assert "human_approval" in bundle["text/plain"]
    svg = html.unescape(run._repr_mimebundle_()["image/svg+xml"])  # Graphviz writes - as &#45;
    assert "kind-interrupt-before is-pending is-current" in svg


def test_draw_writes_svg_and_dot_files(tmp_path: Path) -> None:
    workflow = build_refund_workflow()
    svg = workflow.draw(tmp_path / "refund.svg")
    dot = workflow.draw(tmp_path / "refund.dot", direction="TB")
    assert "<svg" in svg.read_text()
    assert dot.read_text().startswith("digraph")


def test_the_cli_draws_a_module_attribute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "flows.py").write_text(
        textwrap.dedent(
            """
            from agentnb.examples import build_refund_graph
            graph = build_refund_graph()
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["draw", "flows:graph", "-o", "refund.svg"], out=out) == 0
    assert "<svg" in (tmp_path / "refund.svg").read_text()
    assert main(["draw", "flows:nothing", "-o", "x.svg"], out=out) == 2
    assert main(["draw", "flows:graph", "-o", "x.txt"], out=out) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ".svg" in err


def test_machines_and_instances_show_and_draw_themselves(tmp_path: Path) -> None:
    from agentnb.fsm import StateMachine

    door = StateMachine("door", ["closed", "open"], initial="closed")
    door.add_transition("closed", "push", "open")
    door.add_transition("open", "pull", "closed")
    instance = door.start()
    instance.send("push")
    for obj in (door, instance):
        bundle = obj._repr_mimebundle_()
        assert "<svg" in bundle["image/svg+xml"]
        assert "closed" in bundle["text/plain"]
    assert "is-current" in html.unescape(instance._repr_mimebundle_()["image/svg+xml"])
    assert instance.draw(tmp_path / "door.dot").read_text().startswith("digraph")
