"""Statechart diagrams: compound states as clusters, regions, history, initial arrows, lit."""

from __future__ import annotations

import shutil

import pytest

from agentnb import Final, History, ManualClock, Parallel, State, Statechart
from agentnb.errors import DefinitionError
from agentnb.fsm import Raise
from agentnb.render import render_svg, to_dot, to_text
from agentnb.render.extract import diagram_for
from agentnb.render.extract_chart import initial_id
from agentnb.render.model import Cluster, Diagram, Node, NodeKind


def player() -> Statechart:
    return Statechart(
        "player",
        [
            State("off", on={"power": "h"}),
            State(
                "on",
                states=[
                    Parallel(
                        "p",
                        states=[
                            State("track", states=[State("t1", on={"next": "t2"}), State("t2")]),
                            State(
                                "vol",
                                states=[
                                    State("low", on={"up": {"target": "high", "guard": "n > 1"}}),
                                    State("high"),
                                ],
                            ),
                        ],
                    ),
                    History("h", deep=True),
                ],
                on={"power": "off", "eject": "done"},
                after={30: "off"},
            ),
            Final("done"),
        ],
        datamodel={"n": 0},
    )


def test_compound_and_parallel_states_become_nested_clusters() -> None:
    diagram = diagram_for(player())
    assert [(c.id, c.parent, c.parallel, c.region) for c in diagram.clusters] == [
        ("on", None, False, False),
        ("p", "on", True, False),
        ("track", "p", False, True),
        ("vol", "p", False, True),
    ]
    assert {n.id: n.cluster for n in diagram.nodes if n.kind is NodeKind.NORMAL} == {
        "off": None,
        "t1": "track",
        "t2": "track",
        "low": "vol",
        "high": "vol",
    }
    dot = to_dot(diagram)
    assert "compound=true" in dot
    assert dot.count("subgraph cluster_") == 4
    assert dot.count('style="rounded,dashed"') == 2  # the two regions of p


def test_history_initial_arrows_and_after_labels_are_drawn() -> None:
    diagram = diagram_for(player())
    [history] = [n for n in diagram.nodes if n.kind is NodeKind.HISTORY]
    assert (history.id, history.label, history.cluster) == ("h", "H*", "on")
    texts = {(e.source, e.target): e.text for e in diagram.edges}
    assert (initial_id("track"), "t1") in texts  # the initial arrow of a compound state
    assert texts[(initial_id("on"), "off")] in ("power", "after 30s")
    assert "after 30s" in {e.text for e in diagram.edges}
    edge = next(e for e in diagram.edges if e.text == "eject")
    assert (edge.tail_cluster, edge.head_cluster) == ("on", None)
    assert "ltail=cluster_0" in to_dot(diagram)


def test_the_active_configuration_is_lit_and_moves_with_the_instance() -> None:
    instance = player().start(clock=ManualClock())
    instance.send("power")
    dot = to_dot(diagram_for(instance))
    for state in ("on", "p", "track", "vol"):
        assert f'id="node-{state}", class="agentnb-cluster' in dot
    assert "is-current" in dot
    lit = [line for line in dot.splitlines() if "is-current" in line]
    assert len(lit) == 6  # on, p, track, vol (boxes), t1, low (nodes)
    assert "active: on, p, track, t1, vol, low" in to_text(diagram_for(instance))
    instance.send("power")
    assert [line for line in to_dot(diagram_for(instance)).splitlines() if "is-current" in line]
    assert "active: off" in to_text(diagram_for(instance))


def test_the_dot_text_is_deterministic() -> None:
    assert to_dot(diagram_for(player())) == to_dot(diagram_for(player()))


def test_hostile_state_names_are_escaped_in_cluster_labels() -> None:
    chart = Statechart("x", [State('<b>"&\\N', states=[State("a")])])
    dot = to_dot(diagram_for(chart))
    assert "<b>" not in dot.replace("<BR/>", "")
    assert "&lt;b&gt;&quot;&amp;\\\\N" in dot


def test_a_cluster_must_name_a_known_parent() -> None:
    with pytest.raises(DefinitionError, match="unknown parent"):
        Diagram(nodes=(Node("a", "a"),), edges=(), clusters=(Cluster("c", "c", parent="zz"),))


def test_a_chart_renders_to_svg_with_its_cluster_classes() -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz is not installed")
    svg = render_svg(diagram_for(player().start(clock=ManualClock())))
    assert "agentnb&#45;cluster" in svg or "agentnb-cluster" in svg


def test_each_microstep_is_drawn_with_its_exit_and_entry_sets_and_taken_edges() -> None:
    from agentnb.render.extract_chart import microstep_diagrams

    chart = Statechart(
        "steps",
        [
            State("a", on={"go": "b"}),
            State("b", on_enter=[Raise("next")], on={"next": "c"}),
            State("c"),
        ],
    )
    instance = chart.start()
    instance.send("go")
    first, second = microstep_diagrams(chart, instance.microsteps)
    assert first.title == "steps · microstep 1 on 'go' · exit a · enter b"
    assert second.title == "steps · microstep 2 on 'next' · exit b · enter c"
    assert first.overlay is not None
    assert second.overlay is not None
    assert (first.overlay.active, first.overlay.visited) == (("b",), ("a",))
    assert first.overlay.last == ("a", "b")
    assert second.overlay.last == ("b", "c")
    assert "is-traversed" in to_dot(second)


def _edge_geometry(svg: str, dom_id: str) -> tuple[list[tuple[float, float]], tuple[float, float]]:
    """An edge's drawn path points and its label's centre, read from the SVG."""
    import re

    shown = re.escape(dom_id.replace("-", "&#45;", 1))
    group = re.search(rf'<g id="{shown}".*?</g>', svg, re.S)
    assert group is not None, dom_id
    path = re.search(r' d="([^"]*)"', group.group(0))
    assert path is not None
    points = [(float(x), float(y)) for x, y in re.findall(r"(-?[\d.]+),(-?[\d.]+)", path.group(1))]
    text = re.search(
        r'<text text-anchor="start" x="(-?[\d.]+)" y="(-?[\d.]+)"[^>]*>([^<]*)<', group.group(0)
    )
    centre = (
        (float(text.group(1)) + 2.2 * len(text.group(3)), float(text.group(2))) if text else (0, 0)
    )
    return points, centre


def _near(point: tuple[float, float], points: list[tuple[float, float]]) -> float:
    return min(((point[0] - x) ** 2 + (point[1] - y) ** 2) ** 0.5 for x, y in points)


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs the Graphviz dot binary")
def test_a_guarded_way_into_a_compound_state_carries_its_label_on_its_own_arrow() -> None:
    from tests.teach.chart_scenarios import microwave

    svg = render_svg(diagram_for(microwave()))
    into, label = _edge_geometry(svg, "edge-idle~cooking%23initial~t2%2E0")
    inner, _ = _edge_geometry(svg, "edge-cooking%23initial~heating~initial%2Eheating")
    # Drawn as an arrow of its own (not clipped to a stub at the box) ...
    assert _near(into[0], into[-1:]) > 20
    # ... with "start [In('closed')]" beside it, nearer to it than to cooking's first arrow.
    assert _near(label, into) < _near(label, inner)
