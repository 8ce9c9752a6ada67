"""Property tests: random statecharts driven by random events always have a legal configuration.

Legal means: every active state's parent is active; an active compound state has exactly
one active child; an active parallel state has all its regions active; no history
pseudo-state is ever active; and the store's copy equals the interpreter's. Also: a chart
written with ``to_scxml`` and read back behaves the same on the same events.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentnb import Final, History, Parallel, State, Statechart, load_scxml
from agentnb.fsm.nodes import Node

EVENTS = ["a", "b", "c"]


@st.composite
def charts(draw: st.DrawFn) -> Statechart:
    counter = itertools.count()
    skeleton: list[dict[str, Any]] = []

    def build(depth: int, parent_kind: str) -> dict[str, Any]:
        kinds = ["atomic", "compound", "parallel"] if depth < 3 else ["atomic"]
        if parent_kind != "parallel":
            kinds.append("final")
        kind = draw(st.sampled_from(kinds))
        node: dict[str, Any] = {"id": f"s{next(counter)}", "kind": kind, "children": []}
        skeleton.append(node)
        if kind in ("compound", "parallel"):
            count = draw(st.integers(1, 3))
            node["children"] = [build(depth + 1, kind) for _ in range(count)]
            if kind == "compound" and draw(st.booleans()):
                history = {"id": f"h{next(counter)}", "kind": "history", "children": []}
                history["deep"] = draw(st.booleans())
                node["children"].append(history)
                skeleton.append(history)
        return node

    top = [build(1, "root") for _ in range(draw(st.integers(1, 3)))]
    targets = [n["id"] for n in skeleton]
    for node in skeleton:
        if node["kind"] in ("final", "history"):
            continue
        node["on"] = {}
        for _ in range(draw(st.integers(0, 3))):
            event = draw(st.sampled_from(EVENTS))
            spec = {"target": draw(st.sampled_from(targets)), "internal": draw(st.booleans())}
            node["on"].setdefault(event, []).append(spec)

    def spec(node: dict[str, Any]) -> Any:
        kind = node["kind"]
        if kind == "history":
            return History(node["id"], deep=node["deep"])
        if kind == "final":
            return Final(node["id"])
        children = [spec(c) for c in node["children"]]
        if kind == "parallel":
            return Parallel(node["id"], states=children, on=node["on"])
        return State(node["id"], states=children, on=node["on"])

    return Statechart("random", [spec(n) for n in top])


def assert_legal(chart: Statechart, configuration: frozenset[str]) -> None:
    active = {chart.nodes[i] for i in configuration}
    assert active, "the configuration is never empty"

    def check(node: Node) -> None:
        assert node.kind != "history", f"history {node.id} is active"
        if node.parent is not None and node.parent.kind != "scxml":
            assert node.parent in active, f"{node.id} is active without its parent"
        children = [c for c in node.child_states if c in active]
        if node.is_compound:
            assert len(children) == 1, f"compound {node.id} has active children {children}"
        if node.kind == "parallel":
            assert children == node.child_states, f"parallel {node.id} misses a region"

    for node in active:
        check(node)
    top = [c for c in chart.root.child_states if c in active]
    assert len(top) == 1, f"top-level states {top} are active together"


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chart=charts(), events=st.lists(st.sampled_from(EVENTS), max_size=12))
def test_the_configuration_is_always_legal(chart: Statechart, events: list[str]) -> None:
    instance = chart.start()
    assert_legal(chart, instance.configuration)
    for event in events:
        instance.send(event)
        assert_legal(chart, instance.configuration)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chart=charts(), events=st.lists(st.sampled_from(EVENTS), max_size=8))
def test_a_chart_read_back_from_its_scxml_behaves_the_same(
    chart: Statechart, events: list[str]
) -> None:
    again = load_scxml(chart.to_scxml())
    first, second = chart.start("x"), again.start("x")
    for event in events:
        assert first.send(event).target == second.send(event).target
    assert first.configuration == second.configuration
