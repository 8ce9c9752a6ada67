"""Planning supersteps is a pure function of the graph and the last checkpoint."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from agentnb import END, ConflictingUpdate, RoutingError, Send, StateGraph, Workflow
from agentnb.errors import AgentnbError
from agentnb.graph.state import merge_writes
from agentnb.graph.superstep import Frontier, Task, advance, plan


def noop(state: dict[str, Any]) -> None:
    return None


def graph(*names: str) -> StateGraph:
    g = StateGraph("plan", reducers={"total": operator.add})
    for name in names:
        g.add_node(name, noop)
    return g.set_entry_point(names[0])


def fan_out() -> Workflow:
    # Declared c before b: the merge order is by name (LangGraph's task paths), not by
    # declaration or edge order.
    g = graph("a", "c", "b", "d")
    g.add_edge("a", "b").add_edge("a", "c").add_edge(["b", "c"], "d")
    return g.compile()


def test_a_fan_out_plans_every_target_by_name() -> None:
    wf = fan_out()
    frontier, leads = advance(wf, plan(wf, Frontier(("a",))), {})
    assert frontier == Frontier(("b", "c"))
    assert [t.id for t in plan(wf, frontier)] == ["b", "c"]
    assert leads == {"a": ["b", "c"]}


def test_a_join_fires_once_all_its_sources_ran_even_across_supersteps() -> None:
    wf = fan_out()
    only_b, _ = advance(wf, (Task("b", "b"),), {})
    assert only_b.nodes == ()
    assert only_b.waiting == ((0, ("b",)),)
    both, leads = advance(wf, (Task("c", "c"),), {}, only_b.waiting)
    assert both == Frontier(("d",))
    assert leads == {"c": ["d"]}
    together, leads = advance(wf, plan(wf, Frontier(("c", "b"))), {})
    assert together == Frontier(("d",))
    assert leads == {"b": ["d"], "c": ["d"]}


def test_a_node_reached_by_several_branches_is_planned_once() -> None:
    g = graph("a", "b", "c", "d")
    g.add_edge("a", "b").add_edge("a", "c").add_edge("b", "d").add_edge("c", "d")
    wf = g.compile()
    frontier, _ = advance(wf, plan(wf, Frontier(("b", "c"))), {})
    assert plan(wf, frontier) == (Task("d", "d"),)


def test_sends_become_one_task_each_in_send_order_after_the_plain_task() -> None:
    g = graph("split", "map", "reduce")
    g.add_conditional_edge(
        "split", lambda s: [Send("map", {"doc": d}) for d in s["docs"]] + ["map"], ["map"]
    )
    g.add_edge("map", "reduce")
    wf = g.compile()
    frontier, leads = advance(wf, (Task("split", "split"),), {"docs": ["x", "y"]})
    tasks = plan(wf, frontier)
    assert [(t.id, t.payload) for t in tasks] == [
        ("map", None),
        ("map[0]", {"doc": "x"}),
        ("map[1]", {"doc": "y"}),
    ]
    assert leads == {"split": ["map", "map", "map"]}
    after, _ = advance(wf, tasks, {})
    assert after == Frontier(("reduce",))


def test_a_send_to_an_undeclared_node_or_with_a_bad_payload_is_a_routing_error() -> None:
    g = graph("a", "b", "c")
    g.add_conditional_edge("a", lambda s: s["send"], ["b"])
    g.add_edge("b", "c")
    wf = g.compile()
    with pytest.raises(RoutingError, match="not a declared node target"):
        advance(wf, (Task("a", "a"),), {"send": Send("c", {})})
    with pytest.raises(RoutingError, match="payload"):
        advance(wf, (Task("a", "a"),), {"send": Send("b", {"x": {1, 2}})})
    with pytest.raises(AgentnbError, match="payload is the task's input, a dict"):
        Send("b", [1, 2])  # type: ignore[arg-type]


def test_a_frontier_survives_json_and_an_end_frontier_plans_nothing() -> None:
    frontier = Frontier(("b",), (Send("m", {"k": 1}),), ((0, ("b",)),))
    assert Frontier.from_json(frontier.to_json()) == frontier
    assert Frontier.at("b") == Frontier(("b",))
    assert Frontier.at("b").single == "b"
    assert plan(fan_out(), Frontier.at(END)) == ()


def test_branches_that_all_end_leave_an_empty_frontier() -> None:
    g = graph("a", "b", "c")
    g.add_edge("a", "b").add_edge("a", "c")
    wf = g.compile()
    frontier, leads = advance(wf, plan(wf, Frontier(("b", "c"))), {})
    assert frontier == Frontier()
    assert leads == {"b": [END], "c": [END]}


def test_merging_is_in_plan_order_through_the_reducers_whatever_the_finish_order() -> None:
    reducers = {"total": operator.add, "messages": lambda a, b: [*(a or []), *b]}
    writes = [("b", {"total": 2, "messages": ["b"]}), ("c", {"total": 3, "messages": ["c"]})]
    merged = merge_writes({"total": 1}, writes, reducers)
    assert merged == {"total": 6, "messages": ["b", "c"]}


def test_two_tasks_writing_a_key_without_a_reducer_conflict() -> None:
    with pytest.raises(ConflictingUpdate) as caught:
        merge_writes({}, [("b", {"answer": 1}), ("c", {"answer": 2})], {}, run_id="r", step=3)
    assert (caught.value.key, caught.value.tasks, caught.value.step) == ("answer", ("b", "c"), 3)
    assert "has no reducer to merge them. Give it one" in str(caught.value)
