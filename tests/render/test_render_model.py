"""The diagram IR refuses inconsistent diagrams and answers simple questions."""

from __future__ import annotations

import pytest

from agentnb.errors import DefinitionError
from agentnb.render.model import Diagram, Edge, EdgeKind, Node, NodeKind, Overlay


def test_a_node_id_may_appear_once() -> None:
    with pytest.raises(DefinitionError, match="'a' appears twice"):
        Diagram((Node("a", "a"), Node("a", "other")), ())


def test_an_edge_must_join_known_nodes() -> None:
    with pytest.raises(DefinitionError, match="unknown node 'b'"):
        Diagram((Node("a", "a"),), (Edge("a", "b"),))


def test_parallel_edges_need_distinct_keys() -> None:
    nodes = (Node("a", "a"), Node("b", "b"))
    with pytest.raises(DefinitionError, match="appears twice"):
        Diagram(nodes, (Edge("a", "b", label="x"), Edge("a", "b", label="y")))
    diagram = Diagram(nodes, (Edge("a", "b", key="x"), Edge("a", "b", key="y")))
    assert len(diagram.edges) == 2


def test_direction_is_lr_or_tb() -> None:
    with pytest.raises(DefinitionError, match="direction"):
        Diagram((), (), direction="RL")  # type: ignore[arg-type]


def test_node_kinds_list_every_kind_that_applies() -> None:
    node = Node("x", "x", entry=True, pause_before=True, pause_after=True)
    assert node.kinds == ("normal", "entry", "interrupt_before", "interrupt_after")
    assert node.interrupt
    assert Node("END", "", NodeKind.END).kinds == ("end",)


def test_edge_text_joins_label_and_guard() -> None:
    assert Edge("a", "b").text is None
    assert Edge("a", "b", EdgeKind.CONDITIONAL, label="pay").text == "pay"
    assert Edge("a", "b", label="pay", guard="amount > 0").text == "pay [amount > 0]"


def test_overlay_counts_edges_and_knows_completion() -> None:
    overlay = Overlay(status="completed", traversed=(("a", "b", 2), ("b", "a", 1)))
    assert overlay.count("a", "b") == 2
    assert overlay.count("b", "c") == 0
    assert overlay.completed
    assert not Overlay(status="running").completed


def test_with_overlay_keeps_the_rest_and_revalidates() -> None:
    diagram = Diagram((Node("a", "a"),), (), title="t")
    lit = diagram.with_overlay(Overlay(current="a"))
    assert lit.overlay == Overlay(current="a")
    assert (lit.nodes, lit.title) == (diagram.nodes, "t")
    assert lit.node("a") == Node("a", "a")
    assert lit.node("zzz") is None
