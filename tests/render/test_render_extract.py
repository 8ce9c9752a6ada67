"""Workflows become diagrams; event logs become overlays."""

from __future__ import annotations

import pytest
from render_graphs import (
    FakeRun,
    compiled,
    event,
    interrupts_graph,
    loop_graph,
    refund_events_completed,
    refund_events_pending,
    refund_graph,
)

from agentnb.graph.builder import StateGraph
from agentnb.render.extract import (
    diagram_for,
    diagram_from_graph,
    diagram_from_run,
    overlay_from_events,
)
from agentnb.render.model import Diagram, EdgeKind, NodeKind


def _edges(diagram: Diagram) -> list[tuple[str, str, str, str | None]]:
    return [(e.source, e.target, e.kind.value, e.label) for e in diagram.edges]


def test_refund_graph_draws_start_nodes_end_and_its_interrupt() -> None:
    diagram = diagram_from_graph(refund_graph())
    assert [(n.id, n.kind.value) for n in diagram.nodes] == [
        ("START", "start"),
        ("planner", "normal"),
        ("human_approval", "normal"),
        ("refund", "normal"),
        ("END", "end"),
    ]
    assert diagram.node("planner").entry  # type: ignore[union-attr]
    assert diagram.node("human_approval").pause_before  # type: ignore[union-attr]
    assert _edges(diagram) == [
        ("START", "planner", "plain", None),
        ("planner", "human_approval", "conditional", None),
        ("planner", "refund", "conditional", None),
        ("human_approval", "refund", "plain", None),
        ("refund", "END", "plain", None),
    ]
    assert diagram.title == "refund"
    assert diagram.legend  # interrupts and conditional edges need explaining


def test_compiled_workflow_draws_like_its_graph() -> None:
    graph = refund_graph()
    assert diagram_from_graph(compiled(graph)) == diagram_from_graph(graph)


def test_outcomes_label_edges_only_when_they_differ_from_the_target() -> None:
    diagram = diagram_from_graph(interrupts_graph())
    assert _edges(diagram)[1:3] == [
        ("quote", "charge", "conditional", "go, retry"),
        ("quote", "END", "conditional", "give up"),
    ]


def test_a_node_without_edge_ends_implicitly() -> None:
    diagram = diagram_from_graph(loop_graph())
    last = diagram.edges[-1]
    assert (last.source, last.target, last.implicit) == ("publish", "END", True)
    assert ("review", "write", "conditional", "revise") in _edges(diagram)


def test_an_incomplete_graph_draws_what_is_there() -> None:
    g = StateGraph("draft").add_node("a", lambda s: None).add_edge("a", "b")
    g.add_interrupt_after("c")
    diagram = diagram_from_graph(g)
    assert [(n.id, n.kind) for n in diagram.nodes] == [
        ("a", NodeKind.NORMAL),
        ("b", NodeKind.MISSING),
        ("c", NodeKind.MISSING),
    ]
    assert diagram.node("c").pause_after  # type: ignore[union-attr]
    assert _edges(diagram) == [("a", "b", "plain", None)]


def test_an_empty_graph_is_an_empty_diagram() -> None:
    diagram = diagram_from_graph(StateGraph("empty"))
    assert (diagram.nodes, diagram.edges, diagram.legend) == ((), (), False)


def test_legend_can_be_forced_either_way() -> None:
    assert not diagram_from_graph(refund_graph(), legend=False).legend
    plain = StateGraph("p").add_node("a", lambda s: None).set_entry_point("a")
    assert not diagram_from_graph(plain).legend
    assert diagram_from_graph(plain, legend=True).legend


def test_overlay_of_a_run_paused_for_approval() -> None:
    overlay = overlay_from_events(refund_events_pending(), refund_graph())
    assert overlay.status == "pending"
    assert overlay.pending == overlay.current == "human_approval"
    assert overlay.visited == ("planner",)
    assert overlay.traversed == (("START", "planner", 1), ("planner", "human_approval", 1))
    assert overlay.last == ("planner", "human_approval")
    assert (overlay.failed, overlay.rejected) == (None, None)


def test_an_interrupt_after_a_node_marks_that_node_pending() -> None:
    events = [
        event(1, "run_started"),
        event(2, "node_start", "quote"),
        event(3, "state_update", "quote", next="charge"),
        event(4, "interrupted", "charge", when="before", after=None, digest="d1"),
        event(5, "approved", "charge"),
        event(6, "node_start", "charge"),
        event(7, "state_update", "charge", next="ship"),
        event(8, "interrupted", "ship", when="after", after="charge", digest="d2"),
    ]
    overlay = overlay_from_events(events, interrupts_graph())
    assert (overlay.status, overlay.pending, overlay.current) == ("pending", "charge", "ship")
    assert overlay.visited == ("quote", "charge")


def test_overlay_of_a_completed_run_is_its_whole_path() -> None:
    overlay = overlay_from_events(refund_events_completed(), refund_graph())
    assert overlay.completed
    assert overlay.pending is None
    assert overlay.current == "END"
    assert overlay.visited == ("planner", "human_approval", "refund")
    assert [t[:2] for t in overlay.traversed] == [
        ("START", "planner"),
        ("planner", "human_approval"),
        ("human_approval", "refund"),
        ("refund", "END"),
    ]


def test_overlay_counts_each_trip_around_a_loop() -> None:
    events = [event(1, "run_started")]
    for i in range(3):
        events += [
            event(10 * i + 2, "node_start", "write"),
            event(10 * i + 3, "state_update", "write", next="review"),
            event(10 * i + 4, "node_start", "review"),
            event(10 * i + 5, "state_update", "review", next="write" if i < 2 else "publish"),
        ]
    overlay = overlay_from_events(events, loop_graph())
    assert overlay.count("write", "review") == 3
    assert overlay.count("review", "write") == 2
    assert overlay.count("review", "publish") == 1
    assert overlay.count("START", "write") == 1
    assert overlay.current == "publish"
    assert overlay.status == "running"


def test_overlay_of_a_failed_node_keeps_the_error() -> None:
    events = [
        *refund_events_completed()[:8],
        event(9, "failed", "refund", error={"type": "ValueError", "message": "no card"}),
    ]
    overlay = overlay_from_events(events, refund_graph())
    assert (overlay.status, overlay.failed, overlay.current) == ("failed", "refund", None)
    assert overlay.error == "ValueError: no card"


def test_overlay_of_a_rejected_approval_marks_the_node() -> None:
    events = [*refund_events_pending(), event(5, "rejected", "human_approval")]
    overlay = overlay_from_events(events, refund_graph())
    assert (overlay.status, overlay.rejected, overlay.pending) == (
        "rejected",
        "human_approval",
        None,
    )


def test_overlay_after_approval_and_cancellation() -> None:
    approved = [*refund_events_pending(), event(5, "approved", "human_approval")]
    overlay = overlay_from_events(approved, refund_graph())
    assert (overlay.status, overlay.pending, overlay.current) == (
        "approved",
        None,
        "human_approval",
    )
    cancelled = overlay_from_events([*approved, event(6, "cancelled")], refund_graph())
    assert cancelled.status == "cancelled"
    assert cancelled.current == "human_approval"


def test_overlay_skips_unknown_nodes_and_custom_events() -> None:
    events = [
        event(1, "node_start", "planner"),
        event(2, "tool_called", "planner", tool="search"),
        event(3, "node_start", "vanished"),
        event(4, "state_update", "planner", next="vanished"),
        event(5, "state_update", "planner", next=None),
    ]
    overlay = overlay_from_events(events, refund_graph())
    # no run_started: entering the entry node still counts the START edge
    assert overlay.traversed == (("START", "planner", 1),)
    assert overlay.visited == ("planner",)
    assert overlay.current == "planner"


def test_overlay_of_no_events_is_empty() -> None:
    overlay = overlay_from_events([], refund_graph())
    assert (overlay.status, overlay.current, overlay.visited, overlay.traversed) == (
        None,
        None,
        (),
        (),
    )


def test_a_run_draws_its_workflow_with_its_overlay() -> None:
    run = FakeRun(compiled(refund_graph()))
    diagram = diagram_from_run(run)
    assert diagram.title == "refund · run r1 · pending"
    assert diagram.overlay is not None
    assert diagram.overlay.pending == "human_approval"
    assert diagram_for(run) == diagram


def test_diagram_for_accepts_graphs_and_diagrams_and_refuses_the_rest() -> None:
    graph = refund_graph()
    diagram = diagram_for(graph, direction="TB", title="x")
    assert (diagram.direction, diagram.title) == ("TB", "x")
    assert diagram_for(diagram) is diagram
    with pytest.raises(TypeError, match="cannot draw a dict"):
        diagram_for({"nodes": []})


def test_conditional_edges_are_marked_conditional() -> None:
    kinds = {(e.source, e.target): e.kind for e in diagram_from_graph(refund_graph()).edges}
    assert kinds["planner", "refund"] is EdgeKind.CONDITIONAL
    assert kinds["human_approval", "refund"] is EdgeKind.PLAIN
