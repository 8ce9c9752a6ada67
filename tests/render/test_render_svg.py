"""SVG from the real ``dot``: every node and edge findable by id and class, nothing active."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from render_graphs import (
    big_graph,
    interrupts_graph,
    parse_svg,
    refund_events_pending,
    refund_graph,
)

from agentnb.errors import MissingDependency
from agentnb.render import svg as svg_module
from agentnb.render.extract import diagram_from_graph, overlay_from_events
from agentnb.render.svg import (
    SVG_ALLOW,
    RenderError,
    check_svg,
    render,
    render_svg,
    run_graphviz,
)

HEAD = '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'


def test_every_node_and_edge_is_drawn_once_with_its_id_and_classes() -> None:
    diagram = diagram_from_graph(interrupts_graph())
    drawn = parse_svg(render_svg(diagram))
    assert drawn.node_count == {n.id: 1 for n in diagram.nodes}
    assert set(drawn.edges) == {(e.source, e.target) for e in diagram.edges}
    text, classes, title = drawn.nodes["charge"]
    assert text == "‖ charge ‖"
    assert {"agentnb-node", "kind-interrupt-before", "kind-interrupt-after"} <= classes
    assert title == "charge"
    assert "kind-end" in drawn.nodes["END"][1]
    assert drawn.edges["quote", "END"] == ("give up", {"edge", "agentnb-edge", "kind-conditional"})


def test_the_legend_and_the_graph_carry_their_own_ids() -> None:
    svg = render_svg(diagram_from_graph(refund_graph()))
    assert 'id="agentnb&#45;legend"' in svg
    assert 'id="agentnb&#45;graph"' in svg
    assert "<title>refund</title>" in svg  # the graph's title, not the DOT name


def test_overlay_classes_reach_the_svg() -> None:
    graph = refund_graph()
    overlay = overlay_from_events(refund_events_pending(), graph)
    drawn = parse_svg(render_svg(diagram_from_graph(graph, overlay=overlay)))
    assert {"is-pending", "is-current"} <= drawn.nodes["human_approval"][1]
    assert "is-visited" in drawn.nodes["planner"][1]
    assert "is-visited" not in drawn.nodes["refund"][1]
    text, classes = drawn.edges["planner", "human_approval"]
    assert text == "×1"
    assert {"is-traversed", "is-last"} <= classes
    assert "is-traversed" not in drawn.edges["planner", "refund"][1]


def test_node_titles_carry_the_description() -> None:
    drawn = parse_svg(render_svg(diagram_from_graph(refund_graph())))
    assert drawn.nodes["planner"][2] == "planner\ndecides the refund"


def test_png_pdf_and_dot_formats() -> None:
    diagram = diagram_from_graph(refund_graph())
    assert render(diagram, "png").startswith(b"\x89PNG")
    assert render(diagram, "pdf").startswith(b"%PDF")
    assert render(diagram, "dot").startswith(b"digraph agentnb {")


@pytest.mark.parametrize(
    "svg",
    [
        f"{HEAD}<script>alert(1)</script></svg>",
        f'{HEAD}<g onload="alert(1)"/></svg>',
        f'{HEAD}<a xlink:href="javascript:alert(1)"><text>x</text></a></svg>',
        f'{HEAD}<a href=" JaVa\nScript:alert(1)"><text>x</text></a></svg>',
        f'{HEAD}<a xlink:href="https://example.com/"><text>x</text></a></svg>',
        f"{HEAD}<foreignObject><div/></foreignObject></svg>",
        f"{HEAD}<g onload='x'>",
        f'{HEAD}<g style="fill:url(#x)"/></svg>',
        f"{HEAD}<SCRIPT>alert(1)</SCRIPT></svg>",
        f'{HEAD}<g ONCLICK="x"/></svg>',
        f'{HEAD}<animate attributeName="href" to="javascript:alert(1)"/></svg>',
        f'{HEAD}<set attributeName="href" to="#x"/></svg>',
        f'{HEAD}<use href="#n1"/></svg>',
        f"{HEAD}<style>text {{ fill: red }}</style></svg>",
        f'{HEAD}<g data-x="1"/></svg>',  # not on the allow-list: refused, not guessed at
        f'{HEAD}<g filter="url(#f)"/></svg>',
    ],
)
def test_check_svg_refuses_anything_active(svg: str) -> None:
    with pytest.raises(RenderError):
        check_svg(svg)


def test_check_svg_allows_user_text_that_looks_active() -> None:
    check_svg(f"{HEAD}<text>&lt;script&gt; onload=x javascript:alert(1)</text></svg>")
    check_svg(f'{HEAD}<text x="1"> amount=5 data-x="1"</text></svg>')


def test_the_allow_list_names_everything_graphviz_draws_with_and_links_stay_inside() -> None:
    svg = render_svg(diagram_from_graph(refund_graph()))
    root = ET.fromstring(svg)
    used = {e.tag.rsplit("}", 1)[-1].lower() for e in root.iter()}
    named = {a.rsplit("}", 1)[-1].lower() for e in root.iter() for a in e.attrib}
    assert used <= set(SVG_ALLOW["elements"])
    assert named <= set(SVG_ALLOW["attributes"])
    assert SVG_ALLOW["links"] == ["href"]
    assert not {"script", "foreignobject", "style", "animate", "set", "use", "image"} & set(
        SVG_ALLOW["elements"]
    )
    assert not [a for a in SVG_ALLOW["attributes"] if a.startswith("on") or a == "style"]


def _hide_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)


def test_without_dot_rendering_raises_missing_dependency_with_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _hide_dot(monkeypatch)
    with pytest.raises(MissingDependency, match="apt-get install graphviz") as info:
        render_svg(diagram_from_graph(refund_graph()))
    assert info.value.package == "Graphviz (the dot program)"
    assert "pip install" not in str(info.value)
    assert render(diagram_from_graph(refund_graph()), "dot").startswith(b"digraph")


def test_a_layout_that_times_out_falls_back_to_sfdp(monkeypatch: pytest.MonkeyPatch) -> None:
    real = subprocess.run
    tried: list[list[str]] = []

    def slow_dot(argv: list[str], **kwargs: Any) -> Any:
        tried.append(argv)
        if not any(a.startswith("-K") for a in argv):
            raise subprocess.TimeoutExpired(argv, kwargs["timeout"])
        return real(argv, **kwargs)

    monkeypatch.setattr(svg_module.subprocess, "run", slow_dot)
    drawn = parse_svg(render_svg(diagram_from_graph(refund_graph()), timeout=5))
    assert [a[1] for a in tried] == ["-Tsvg", "-Ksfdp"]
    assert set(drawn.nodes) == {"START", "planner", "human_approval", "refund", "END"}


def test_when_every_engine_times_out_the_error_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(argv: list[str], **kwargs: Any) -> Any:
        raise subprocess.TimeoutExpired(argv, kwargs["timeout"])

    monkeypatch.setattr(svg_module.subprocess, "run", never)
    with pytest.raises(RenderError, match=r"did not finish within 2 s .*-Kneato"):
        run_graphviz("digraph { a }", timeout=2, dot="dot")


def test_graphviz_errors_are_reported() -> None:
    with pytest.raises(RenderError, match=r"exited with status 1.*syntax error"):
        run_graphviz("digraph { a -> }")


def test_big_graphs_cap_the_layout_effort(monkeypatch: pytest.MonkeyPatch) -> None:
    real = subprocess.run
    seen: list[list[str]] = []

    def spy(argv: list[str], **kwargs: Any) -> Any:
        seen.append(argv)
        return real(argv, **kwargs)

    monkeypatch.setattr(svg_module.subprocess, "run", spy)
    render_svg(diagram_from_graph(refund_graph()))
    render_svg(diagram_from_graph(big_graph(150, 300)))
    assert "-Gnslimit=0.001" not in seen[0]
    assert "-Gnslimit=0.001" in seen[1]


@pytest.mark.slow
def test_500_nodes_and_1000_random_cyclic_edges_render() -> None:
    diagram = diagram_from_graph(big_graph(500, 1000))
    drawn = parse_svg(render_svg(diagram))
    assert len(drawn.nodes) == 501  # with the start marker
    assert len(drawn.edges) == len({(e.source, e.target) for e in diagram.edges})
