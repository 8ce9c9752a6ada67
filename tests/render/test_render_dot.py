"""DOT output: pinned by snapshots, deterministic, and escaping every piece of user text."""

from __future__ import annotations

import re
import urllib.parse

import pytest
from render_graphs import (
    assert_snapshot,
    compiled,
    event,
    interrupts_graph,
    loop_graph,
    refund_events_completed,
    refund_events_pending,
    refund_graph,
)

from agentnb.graph.builder import StateGraph
from agentnb.render.dot import display_text, dom_id, edge_dom_id, node_dom_id, to_dot
from agentnb.render.extract import diagram_from_graph, overlay_from_events
from agentnb.render.model import Diagram, Edge, Node


def test_refund_graph_snapshot() -> None:
    assert_snapshot("refund.dot", to_dot(diagram_from_graph(refund_graph())))


def test_loop_graph_snapshot_top_to_bottom() -> None:
    assert_snapshot("loop.dot", to_dot(diagram_from_graph(loop_graph(), direction="TB")))


def test_several_interrupts_snapshot() -> None:
    assert_snapshot("interrupts.dot", to_dot(diagram_from_graph(interrupts_graph())))


def test_run_paused_midway_snapshot() -> None:
    graph = refund_graph()
    overlay = overlay_from_events(refund_events_pending(), graph)
    diagram = diagram_from_graph(graph, overlay=overlay, title="refund · run r1")
    assert_snapshot("refund_pending.dot", to_dot(diagram))


def test_run_completed_snapshot() -> None:
    graph = refund_graph()
    overlay = overlay_from_events(refund_events_completed(), graph)
    assert_snapshot("refund_completed.dot", to_dot(diagram_from_graph(graph, overlay=overlay)))


def test_run_failed_in_a_loop_snapshot() -> None:
    graph = loop_graph()
    events = [
        event(1, "run_started"),
        event(2, "node_start", "write"),
        event(3, "state_update", "write", next="review"),
        event(4, "node_start", "review"),
        event(5, "state_update", "review", next="write"),
        event(6, "node_start", "write"),
        event(7, "failed", "write", error={"type": "TimeoutError", "message": "llm"}),
    ]
    diagram = diagram_from_graph(graph, overlay=overlay_from_events(events, graph))
    assert_snapshot("loop_failed.dot", to_dot(diagram))


def test_same_graph_same_bytes() -> None:
    first = to_dot(diagram_from_graph(refund_graph()))
    assert to_dot(diagram_from_graph(refund_graph())) == first
    assert to_dot(diagram_from_graph(compiled(refund_graph()))) == first


def test_interrupt_sets_do_not_leak_their_order() -> None:
    # sets iterate in hash order, which changes between processes for strings
    names = [f"n{i}" for i in range(20)]
    texts = set()
    for order in (names, names[::-1]):
        g = StateGraph("s")
        for n in names:
            g.add_node(n, lambda s: None)
        g.add_interrupt_before(*order)
        g.add_interrupt_after(*order)
        texts.add(to_dot(diagram_from_graph(g)))
    assert len(texts) == 1


def test_dot_node_names_are_generated_and_user_text_only_in_labels_and_ids() -> None:
    evil = 'x" -> y [label="pwn"]; z'
    g = StateGraph("g").add_node(evil, lambda s: None).set_entry_point(evil)
    dot = to_dot(diagram_from_graph(g))
    statements = [line.strip() for line in dot.splitlines()[4:-1]]
    assert [s.split(" ", 1)[0] for s in statements] == ["n0", "n1", "n2", "n0", "n1"]
    assert "label=<x&quot; -&gt; y [label=&quot;pwn&quot;&#93;; z>" in dot
    assert 'id="node-x%22%20-%3E%20y%20%5Blabel%3D%22pwn%22%5D%3B%20z"' in dot


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("a<b>&c", "a&lt;b&gt;&amp;c"),
        ("\\N \\G \\E \\L", "\\\\N \\\\G \\\\E \\\\L"),
        ("two\nlines", "two<BR/>lines"),
        ("tab\there", "tab\\\\x09here"),
        ("{braces} [and] |bars|", "{braces} [and&#93; |bars|"),
        ("]", "&#93;"),
        ("javascript:alert(1)", "javascript:alert(1)"),
        ("café ☕ 日本", "café ☕ 日本"),
    ],
)
def test_labels_escape_user_text(name: str, label: str) -> None:
    dot = to_dot(Diagram((Node("x", name),), ()))
    assert f"label=<{label}>" in dot


def test_titles_and_edge_labels_are_escaped_too() -> None:
    diagram = Diagram(
        (Node("a", "a"), Node("b", "b")),
        (Edge("a", "b", label="<i>&\\N</i>"),),
        title='"t"\\G',
    )
    dot = to_dot(diagram)
    assert "label=<&lt;i&gt;&amp;\\\\N&lt;/i&gt;>" in dot
    assert "label=<&quot;t&quot;\\\\G>" in dot


def test_invisible_characters_are_spelled_out() -> None:
    assert display_text("plain text") == "plain text"
    assert display_text("a\x00b\u200bc\u202ed\n") == "a\\x00b\\u200bc\\u202ed\n"
    assert display_text("\ud800") == "\\ud800"


def test_dom_ids_are_safe_and_reversible() -> None:
    for name in ["human_approval", "a b", "a~b", "x/y?z#w", "日本", "-", "%41", "\ud800"]:
        encoded = dom_id(name)
        assert re.fullmatch(r"[A-Za-z0-9_%-]+", encoded)
        assert urllib.parse.unquote(encoded, errors="surrogatepass") == name


def test_edge_ids_cannot_collide() -> None:
    a = edge_dom_id(Edge("a~b", "c"))
    b = edge_dom_id(Edge("a", "b~c"))
    assert a != b
    assert edge_dom_id(Edge("a", "b", key="k")) == "edge-a~b~k"
    assert node_dom_id("x", "p1-") == "p1-node-x"


def test_id_prefix_reaches_every_id() -> None:
    dot = to_dot(diagram_from_graph(refund_graph()), id_prefix="w7-")
    ids = re.findall(r'\bid="([^"]*)"', dot)
    assert ids
    assert all(i.startswith("w7-") for i in ids)
