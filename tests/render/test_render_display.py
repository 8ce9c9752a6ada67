"""Notebook display: SVG plus text with Graphviz, readable text without it."""

from __future__ import annotations

import shutil
from typing import Any

import pytest
from render_graphs import FakeRun, compiled, parse_svg, refund_graph

from agentnb.graph.builder import StateGraph
from agentnb.render import svg as svg_module
from agentnb.render.display import INSTALL_HINT, SVG_MIME, mimebundle
from agentnb.render.extract import diagram_from_graph
from agentnb.render.svg import RenderError
from agentnb.render.text import to_text

REFUND_TEXT = """\
refund: 3 nodes, 5 edges
  planner  (entry; decides the refund)
  human_approval  (approval before)
  refund
edges (-> always, ~> conditional):
  START -> planner
  planner ~> human_approval
  planner ~> refund
  human_approval -> refund
  refund -> END"""


def test_a_graph_displays_as_svg_with_a_text_listing() -> None:
    bundle = mimebundle(refund_graph())
    assert set(bundle) == {"text/plain", SVG_MIME}
    assert bundle["text/plain"] == REFUND_TEXT
    assert set(parse_svg(bundle[SVG_MIME]).nodes) == {
        "START",
        "planner",
        "human_approval",
        "refund",
        "END",
    }


def test_a_run_displays_its_overlay() -> None:
    bundle = mimebundle(FakeRun(compiled(refund_graph())))
    assert bundle["text/plain"].endswith(
        "run: pending — awaiting approval at human_approval\n"
        "  visited: planner\n"
        "  taken: START -> planner ×1, planner -> human_approval ×1"
    )
    assert "is-pending" in parse_svg(bundle[SVG_MIME]).nodes["human_approval"][1]


def test_without_dot_the_display_is_text_and_an_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    bundle = mimebundle(compiled(refund_graph()))
    assert bundle == {"text/plain": f"{REFUND_TEXT}\n{INSTALL_HINT}"}
    assert "apt-get install graphviz" in INSTALL_HINT


def test_a_failing_dot_degrades_to_text_too(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> str:
        raise RenderError("dot crashed", "segfault")

    monkeypatch.setattr("agentnb.render.display.render_svg", broken)
    text = mimebundle(refund_graph())["text/plain"]
    assert text.startswith(REFUND_TEXT)
    assert "could not be drawn: dot crashed: segfault" in text


def test_the_front_end_can_decline_svg(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []
    monkeypatch.setattr(svg_module, "run_graphviz", lambda *a, **k: calls.append(a))
    assert set(mimebundle(refund_graph(), include={"text/plain"})) == {"text/plain"}
    assert set(mimebundle(refund_graph(), exclude={SVG_MIME})) == {"text/plain"}
    assert calls == []  # dot was never started


def test_text_listing_of_an_incomplete_graph_with_odd_names() -> None:
    g = StateGraph("draft").add_node("two\nlines", lambda s: None).add_edge("two\nlines", "b")
    g.add_conditional_edge("b", lambda s: "x", {"yes": "two\nlines"})
    assert to_text(diagram_from_graph(g)) == (
        "draft: 2 nodes, 2 edges\n"
        "  two\\nlines\n"
        "  b  (not defined yet)\n"
        "edges (-> always, ~> conditional):\n"
        "  two\\nlines -> b\n"
        "  b ~> two\\nlines  [yes]"
    )
