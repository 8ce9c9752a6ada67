"""LangGraph's spellings that fit agentnb's model: a LangGraph user's graph code runs as
typed, and what does not fit is refused with the agentnb way to say it."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypedDict

import pytest

from agentnb import END, START, DefinitionError, MemoryCheckpointer, StateGraph, Status


def nodes(*names: str) -> StateGraph:
    g = StateGraph("lg")
    for name in names:
        g.add_node(name, lambda state, name=name: {"path": [*state.get("path", []), name]})
    return g


def size(state: dict[str, Any]) -> Literal["approve", "refund"]:
    return "approve" if state["amount"] > 500 else "refund"


@pytest.mark.parametrize(
    "path_map",
    [["approve", "refund"], {"approve": "approve", "refund": "refund"}, None],
    ids=["list", "dict", "literal-annotation"],
)
def test_add_conditional_edges_takes_langgraphs_path_map_forms(path_map: Any) -> None:
    g = nodes("plan", "approve", "refund").add_edge(START, "plan")
    g.add_conditional_edges("plan", size, path_map)
    g.add_edge("approve", END).add_edge("refund", END)
    wf = g.compile()
    assert sorted(wf.branches["plan"].targets.values()) == ["approve", "refund"]
    assert wf.invoke({"amount": 900}).state["path"] == ["plan", "approve"]
    assert wf.invoke({"amount": 10}).state["path"] == ["plan", "refund"]


def test_a_dict_path_map_maps_outcomes_to_nodes_and_end() -> None:
    g = nodes("plan", "approve").set_entry_point("plan")
    g.add_conditional_edges(
        "plan",
        lambda s: "big" if s["amount"] > 500 else "small",
        {
            "big": "approve",
            "small": END,
        },
    )
    wf = g.compile()
    assert wf.invoke({"amount": 900}).state["path"] == ["plan", "approve"]
    small = wf.invoke({"amount": 1})
    assert (small.status, small.state["path"]) == (Status.COMPLETED, ["plan"])


def test_add_conditional_edges_without_targets_to_read_is_a_definition_error() -> None:
    g = nodes("plan", "approve").set_entry_point("plan")
    with pytest.raises(DefinitionError, match="declares no targets") as caught:
        g.add_conditional_edges("plan", lambda s: "approve")
    assert "Literal" in str(caught.value)
    with pytest.raises(DefinitionError, match="not a string"):
        g.add_conditional_edges("plan", lambda s: s["ok"], {True: "approve", False: END})
    assert "plan" not in g.branches


def test_set_finish_point_ends_the_run_after_that_node() -> None:
    g = nodes("a", "b").set_entry_point("a").add_edge("a", "b").set_finish_point("b")
    run = g.compile().invoke({})
    assert (run.status, run.state["path"]) == (Status.COMPLETED, ["a", "b"])
    assert g.edges["b"] == [END]


def test_add_node_with_only_a_function_names_the_node_after_it() -> None:
    def chatbot(state: dict[str, Any]) -> dict[str, Any]:
        return {"reply": "hi"}

    inner = StateGraph("research").add_node("look", lambda s: {"found": 1})
    g = StateGraph("bot").add_node(chatbot).add_node(inner.set_entry_point("look"))
    g.add_edge(START, "chatbot").add_edge("chatbot", "research")
    assert list(g.nodes) == ["chatbot", "research"]
    assert g.compile().invoke({}).state == {"reply": "hi", "found": 1}
    with pytest.raises(DefinitionError, match="no name of its own"):
        g.add_node(lambda s: None)


def test_compile_interrupt_before_pauses_like_add_interrupt_before_and_leaves_the_graph() -> None:
    g = nodes("plan", "pay").set_entry_point("plan").add_edge("plan", "pay")
    store = MemoryCheckpointer()
    paused = g.compile(checkpointer=store, interrupt_before=["pay"]).invoke({})
    assert (paused.status, paused.node) == (Status.PENDING, "pay")
    after = g.compile(checkpointer=store, interrupt_after="*").invoke({})
    assert (after.status, after.node) == (Status.PENDING, "pay")  # paused after plan
    assert g.interrupts_before == g.interrupts_after == set()
    assert g.compile().invoke({}).status == Status.COMPLETED
    with pytest.raises(DefinitionError, match="nope"):
        g.compile(interrupt_before=["nope"])


def test_a_second_entry_from_start_is_refused_with_the_fan_out_to_write_instead() -> None:
    g = nodes("a", "b").add_edge(START, "a")
    g.add_edge(START, "a")  # the same entry again is fine
    with pytest.raises(DefinitionError, match="a run starts at one node") as caught:
        g.add_edge(START, "b")
    assert "add_edge('a', 'b')" in str(caught.value)
    assert g.entry == "a"


def test_a_conditional_edge_from_start_is_refused_with_a_first_node_to_route_from() -> None:
    g = nodes("a", "b")
    with pytest.raises(DefinitionError, match="cannot leave START") as caught:
        g.add_conditional_edges(START, lambda s: "a", ["a", "b"])
    assert 'set_entry_point("route")' in str(caught.value)


class Research(TypedDict):
    topic: str
    docs: Annotated[list[str], operator.add]
    hits: Annotated[int, operator.add]


def test_a_typed_dict_schema_names_the_graph_and_its_annotated_reducers_merge_branches() -> None:
    g = StateGraph(Research).add_node("plan", lambda s: None)
    for name in ("web", "papers"):
        g.add_node(name, lambda s, name=name: {"docs": [f"{name}:{s['topic']}"], "hits": 1})
        g.add_edge("plan", name)
    wf = g.set_entry_point("plan").compile()
    assert wf.name == "Research"
    run = wf.invoke({"topic": "bees"})  # docs and hits unset: they start from [] and 0
    # merged by node name, as LangGraph merges a superstep (its task paths)
    assert (run.state["docs"], run.state["hits"]) == (["papers:bees", "web:bees"], 2)
    assert run.state["topic"] == "bees"


@dataclass
class Counted:
    total: Annotated[int, operator.add]
    label: Annotated[str, "a note, not a reducer"]


def test_a_schemas_reducers_yield_to_explicit_ones_and_a_plain_annotation_replaces() -> None:
    g = StateGraph(Counted, reducers={"total": max})
    assert g.reducers["total"] is max
    assert "label" not in g.reducers
    assert StateGraph(Counted).reducers["total"](None, 5) == 5


class Broken(TypedDict):
    later: Annotated[list[str], "NotImportedAnywhere"]
    missing: NotImportedAnywhere  # type: ignore[name-defined]  # noqa: F821


def test_a_schema_whose_annotations_do_not_resolve_is_a_definition_error() -> None:
    with pytest.raises(DefinitionError, match="annotations that do not resolve"):
        StateGraph(Broken)


def test_add_sequence_chains_functions_and_named_pairs_in_order() -> None:
    def fetch(state: dict[str, Any]) -> dict[str, Any]:
        return {"path": ["fetch"]}

    g = StateGraph("seq", reducers={"path": operator.add})
    g.add_sequence([fetch, ("clean", lambda s: {"path": ["clean"]}), ("save", lambda s: None)])
    assert (g.edges["fetch"], g.edges["clean"]) == (["clean"], ["save"])
    run = g.add_edge(START, "fetch").compile().invoke({"path": []})
    assert run.state["path"] == ["fetch", "clean"]


def test_langgraphs_start_and_end_strings_mean_start_and_end() -> None:
    def route(state: dict[str, Any]) -> Literal["again", "__end__"]:
        return "again" if len(state["path"]) < 3 else "__end__"

    g = nodes("again").add_edge("__start__", "again").add_conditional_edges("again", route)
    assert g.branches["again"].targets == {"again": "again", "__end__": END}
    run = g.compile().invoke({"path": []})
    assert (run.status, run.state["path"]) == (Status.COMPLETED, ["again"] * 3)
    g = nodes("a").set_entry_point("a").add_edge("a", "__end__")
    assert g.edges["a"] == [END]
