"""Subgraphs: a graph as a node, its run nested under the parent's, decided from the top."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

import pytest

from agentnb import (
    Checkpointer,
    DefinitionError,
    EventType,
    NodeContext,
    NodeFailed,
    StateGraph,
    Status,
)
from tests.conftest import Driver


def research(calls: Counter[str] | None = None, *, pause: bool = False) -> StateGraph:
    seen = calls if calls is not None else Counter()

    def search(state: dict[str, Any]) -> dict[str, Any]:
        seen["search"] += 1
        return {"notes": [f"found {state['topic']}"], "hits": 2}

    def summarise(state: dict[str, Any]) -> dict[str, Any]:
        seen["summarise"] += 1
        return {"summary": " / ".join(state["notes"])}

    g = StateGraph("research", reducers={"notes": operator.add})
    g.add_node("search", search).add_node("summarise", summarise)
    g.set_entry_point("search").add_edge("search", "summarise")
    if pause:
        g.add_interrupt_before("summarise")
    return g


def parent(inner: Any, **keys: Any) -> StateGraph:
    g = StateGraph("report", reducers={"notes": operator.add})
    g.add_node("plan", lambda s: {"topic": "otters", "notes": ["planned"]})
    g.add_node("research", inner, **keys)
    g.add_node("write", lambda s: {"report": f"{s['summary']} ({len(s['notes'])} notes)"})
    g.set_entry_point("plan").add_edge("plan", "research").add_edge("research", "write")
    return g


def test_a_subgraph_runs_as_a_nested_run_and_returns_what_it_changed(
    drive: Driver, store: Checkpointer
) -> None:
    run = parent(research()).compile(store).start({"notes": []})
    drive.run(run)
    assert run.status == Status.COMPLETED
    # The child appended to notes with its reducer; the parent takes its value as it is.
    assert run.state["notes"] == ["planned", "found otters"]
    assert run.state["report"] == "planned / found otters (2 notes)"
    [child] = run.children()
    assert child.run_id == f"{run.run_id}/research@1"
    assert child.status == Status.COMPLETED
    assert [e.node for e in child.events if e.type == EventType.NODE_START] == [
        "search",
        "summarise",
    ]


def test_a_compiled_workflow_can_be_a_node_too(store: Checkpointer) -> None:
    run = parent(research().compile()).compile(store).invoke({"notes": []})
    assert run.state["report"].startswith("planned / found otters")
    assert run.children()[0].workflow.checkpointer is store  # bound to the parent's store


def test_input_and_output_keys_limit_what_crosses_the_boundary(store: Checkpointer) -> None:
    seen: dict[str, Any] = {}

    def look(state: dict[str, Any]) -> dict[str, Any]:
        seen.update(state)
        return {"summary": f"about {state['topic']}", "scratch": 1}

    inner = StateGraph("inner").add_node("look", look).set_entry_point("look")
    g = parent(inner, input_keys=["topic"], output_keys=["summary"])
    run = g.compile(store).invoke({"notes": [], "secret": "x"})
    assert seen == {"topic": "otters"}
    assert "scratch" not in run.state
    assert run.state["report"] == "about otters (1 notes)"


def test_an_interrupt_inside_a_subgraph_pauses_the_parent_and_is_decided_from_it(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()
    run = parent(research(calls, pause=True)).compile(store).start({"notes": []})
    drive.run(run)
    assert (run.status, run.node) == (Status.PENDING, "research")
    [child] = run.children()
    assert (child.status, child.node) == (Status.PENDING, "summarise")
    run.approve(by="ada")
    assert child.status == Status.APPROVED
    assert run.status == Status.APPROVED
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert calls == {"search": 1, "summarise": 1}  # the child went on, not from the start
    assert [d.approver for d in child.decisions()] == ["ada"]


def test_rejecting_from_the_parent_rejects_both(store: Checkpointer) -> None:
    run = parent(research(pause=True)).compile(store).start({"notes": []})
    run.run()
    run.reject(by="ada")
    assert run.status == Status.REJECTED
    assert run.children()[0].status == Status.REJECTED


def test_stepping_the_parent_goes_into_the_subgraph_node_by_node(drive: Driver) -> None:
    run = parent(research()).compile().start({"notes": []})
    assert drive.step(run).node == "plan"
    inside = drive.step(run)
    starts = [(e.run_id == run.run_id, e.node) for e in inside.events if e.type == "node_start"]
    assert starts == [(True, "research"), (False, "search")]  # into the subgraph, one node
    assert run.node == "research"  # the parent waits on its subgraph
    [child] = run.children()
    assert child.node == "summarise"
    drive.step(run)  # summarise, and the subgraph's end: research is done
    assert run.node == "write"
    drive.step(run)
    assert run.status == Status.COMPLETED


def test_subgraphs_nest_three_deep_with_a_question_at_the_bottom(
    drive: Driver, store: Checkpointer
) -> None:
    def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"answer": ctx.interrupt({"question": "Depth?", "schema": {"type": "integer"}})}

    level3 = StateGraph("level3").add_node("ask", ask).set_entry_point("ask")
    level2 = StateGraph("level2").add_node("deeper", level3).set_entry_point("deeper")
    level1 = StateGraph("level1").add_node("deeper", level2).set_entry_point("deeper")
    top = StateGraph("top").add_node("deeper", level1).set_entry_point("deeper")
    run = top.compile(store).start({})
    drive.run(run)
    assert run.status == Status.PENDING
    question = run.question
    assert question is not None
    assert question["question"] == "Depth?"
    run.respond(3, by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state == {"answer": 3}
    depth, node = 0, run
    while node.children():
        [node] = node.children()
        depth += 1
    assert depth == 3
    assert node.run_id == f"{run.run_id}/deeper@0/deeper@0/deeper@0"


def test_a_failing_subgraph_fails_the_parent_with_the_cause(store: Checkpointer) -> None:
    def broken(state: dict[str, Any]) -> None:
        raise ValueError("index offline")

    inner = StateGraph("inner").add_node("search", broken).set_entry_point("search")
    run = parent(inner).compile(store).start({"notes": []})
    with pytest.raises(NodeFailed, match="index offline") as caught:
        run.run()
    assert caught.value.node == "research"
    assert run.status == Status.FAILED


def test_subgraph_keys_are_only_for_subgraphs_and_a_graph_cannot_contain_itself() -> None:
    g = StateGraph("g")
    with pytest.raises(DefinitionError, match="subgraphs only"):
        g.add_node("a", lambda s: None, input_keys=["x"])
    with pytest.raises(DefinitionError, match="node of itself"):
        g.add_node("b", g)


def test_a_subgraph_in_a_branch_pauses_alone_while_its_sibling_finishes(
    drive: Driver, store: Checkpointer
) -> None:
    calls: Counter[str] = Counter()

    def other(state: dict[str, Any]) -> dict[str, Any]:
        calls["other"] += 1
        return {"side": True}

    g = StateGraph("fan", reducers={"notes": operator.add})
    g.add_node("plan", lambda s: {"topic": "otters"})
    g.add_node("research", research(calls, pause=True)).add_node("other", other)
    g.set_entry_point("plan").add_edge("plan", "research").add_edge("plan", "other")
    run = g.compile(store).start({"notes": []})
    drive.run(run)
    assert run.status == Status.PENDING
    assert [t.task_id for t in run.pending()] == ["research"]
    assert calls == {"search": 1, "other": 1}
    run.approve(by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state["side"] is True
    assert run.state["summary"] == "found otters"
    assert calls == {"search": 1, "other": 1, "summarise": 1}


def test_a_pause_in_a_subgraph_approved_through_the_store_reaches_the_subgraph(
    store: Checkpointer,
) -> None:
    # The CLI and the panel decide with the store, on the parent run only.
    calls: Counter[str] = Counter()
    wf = parent(research(calls, pause=True)).compile(store)
    run = wf.start({"notes": []})
    run.run()
    store.decide(run.run_id, "approved", "ada")
    wf.attach(run.run_id).run()
    run = wf.attach(run.run_id)
    assert run.status == Status.COMPLETED
    [child] = run.children()
    assert [(d.approver, d.accepted) for d in child.decisions()] == [("ada", True)]
    assert child.decisions()[0].comment == f"approved on the parent run {run.run_id}"
    assert calls == {"search": 1, "summarise": 1}


def test_a_subgraph_is_drawn_as_a_box_holding_its_graph_nested_as_deep_as_it_goes() -> None:
    from agentnb.render.dot import to_dot
    from agentnb.render.extract import diagram_from_graph
    from agentnb.render.mermaid import to_mermaid

    level2 = StateGraph("level2").add_node("deep", lambda s: None).set_entry_point("deep")
    inner = research().add_node("nested", level2).add_edge("summarise", "nested")
    diagram = diagram_from_graph(parent(inner))
    assert [(c.id, c.parent) for c in diagram.clusters] == [
        ("research:subgraph", None),
        ("research/nested:subgraph", "research:subgraph"),
    ]
    inside = {n.id: n.cluster for n in diagram.nodes if n.cluster}
    assert inside == {
        "research": "research:subgraph",
        "research/search": "research:subgraph",
        "research/summarise": "research:subgraph",
        "research/nested": "research/nested:subgraph",
        "research/nested/deep": "research/nested:subgraph",
    }
    pairs = {(e.source, e.target) for e in diagram.edges}
    assert ("research", "research/search") in pairs
    assert ("research/search", "research/summarise") in pairs
    assert ("research/nested", "research/nested/deep") in pairs
    assert ("research", "write") in pairs  # the parent's own edges are unchanged
    assert "subgraph" in to_dot(diagram)
    assert '"deep"' in to_mermaid(diagram)  # Mermaid draws the nested nodes too
