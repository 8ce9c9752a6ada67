"""Mermaid text: the same IR and grammar as DOT, and no name can break out of its label."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from render_graphs import (
    compiled,
    interrupts_graph,
    loop_graph,
    refund_events_pending,
    refund_graph,
)
from test_render_escaping import graphs

from agentnb.fsm import StateMachine
from agentnb.graph.builder import RESERVED, StateGraph
from agentnb.render.extract import diagram_from_graph, overlay_from_events
from agentnb.render.mermaid import to_mermaid

LABEL = re.compile(r'"[^"]*"')
NODE_LINE = re.compile(r"^  n\d+(\(\( \)\)|\(\(\( \)\)\)|\(\(\(\"[^\"]*\"\)\)\)|\{\{\"[^\"]*\"\}\}"
                       r"|\[/\"[^\"]*\"/\]|\(\"[^\"]*\"\))$")  # fmt: skip
EDGE_LINE = re.compile(r'^  n\d+ (-->|-\.->|==>)(\|"[^"]*"\|)? n\d+$')


def lines_of(text: str) -> list[str]:
    return text.splitlines()


def test_a_workflow_is_a_flowchart_with_markers_interrupts_and_dotted_conditional_edges() -> None:
    text = compiled(refund_graph()).to_mermaid()
    lines = lines_of(text)
    assert lines[:3] == ["---", 'title: "refund"', "---"]
    assert lines[3] == "flowchart LR"
    body = lines[4:]
    assert "  n0(( ))" in body  # START
    assert any(line.endswith("((( )))") for line in body)  # END
    assert any("{{" in line and "#8214; " in line for line in body)  # ‖ before the interrupt
    assert any(" -.-> " in line for line in body)  # a router's edge (outcome = target name)
    assert all(NODE_LINE.match(line) or EDGE_LINE.match(line) for line in body), body


def test_a_router_outcome_other_than_the_target_name_labels_its_edge() -> None:
    assert re.search(r'^  n\d+ -\.->\|"[^"]+"\| n\d+$', compiled(loop_graph()).to_mermaid(), re.M)


def test_direction_and_title_options_reach_the_text() -> None:
    text = compiled(refund_graph()).to_mermaid(direction="TB", title='say "hi"\nthere')
    assert lines_of(text)[:4] == ["---", 'title: "say \\"hi\\"\\nthere"', "---", "flowchart TB"]


def test_a_run_overlay_becomes_classes_and_thick_taken_edges() -> None:
    graph = refund_graph()
    diagram = diagram_from_graph(graph).with_overlay(
        overlay_from_events(refund_events_pending(), graph)
    )
    text = to_mermaid(diagram)
    assert "==>" in text
    assert re.search(r"^  class n\d+(,n\d+)* visited$", text, re.M)
    assert re.search(r"^  class n\d+ pending$", text, re.M)
    assert "classDef pending fill:#f4b740" in text
    assert "current" not in to_mermaid(diagram_from_graph(graph))


def test_pause_after_marks_the_other_side() -> None:
    text = to_mermaid(diagram_from_graph(interrupts_graph()))
    assert re.search(r'\{\{"[^"]* #8214;"\}\}', text)


def test_a_machine_draws_its_transitions_with_event_and_guard() -> None:
    def unlocked(ctx: object) -> bool:
        return True

    machine = StateMachine("door", states=["closed", "open", "gone"], initial="closed",
                           final=["gone"])  # fmt: skip
    machine.add_transition("closed", "open", "open")
    machine.add_transition("open", "close", "closed")
    machine.add_transition("open", "remove", "gone", guard=unlocked)
    text = machine.to_mermaid()
    assert '|"open"|' in text
    assert '|"remove #91;unlocked#93;"|' in text  # [guard], brackets encoded
    assert re.search(r'^  n\d+\(\(\("gone"\)\)\)$', text, re.M)  # a final state


names = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() and s not in RESERVED)


@settings(max_examples=60, deadline=None)
@given(graphs())
def test_no_name_breaks_out_of_its_quoted_label(graph: StateGraph) -> None:
    diagram = diagram_from_graph(graph)
    text = to_mermaid(diagram)
    body = lines_of(text)[1:] if not diagram.title else lines_of(text)[4:]
    assert len(body) == len(diagram.nodes) + len(diagram.edges)  # no line was injected
    for line in body:
        assert NODE_LINE.match(line) or EDGE_LINE.match(line), line
        for label in LABEL.findall(line):
            assert re.fullmatch(r'"[A-Za-z0-9 _.,:!?+=@#;-]*"', label), label


@settings(max_examples=60, deadline=None)
@given(names)
def test_entity_codes_decode_back_to_the_name(name: str) -> None:
    g = StateGraph("g")
    g.add_node(name, lambda s: None)
    g.set_entry_point(name)
    text = to_mermaid(diagram_from_graph(g))
    labels = [m[1:-1] for m in LABEL.findall(text)]
    decoded = {re.sub(r"#(\d+);", lambda m: chr(int(m[1])), label) for label in labels}
    assert name in decoded
