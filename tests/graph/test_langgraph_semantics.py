"""Each of LangGraph's superstep rules agentnb adopted, shown on the smallest graph (the
differential suite, test_langgraph_parity.py, checks them together on generated ones)."""

from __future__ import annotations

import itertools
import operator
from typing import Annotated, Any, TypedDict

import pytest

from agentnb import END, MemoryCheckpointer, RecursionLimitReached, Send, StateGraph, Status


def tagged(current: list[str], new: list[str]) -> list[str]:
    return [*current, *(f"{v}!" for v in new)]


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]
    tags: Annotated[list[str], tagged]
    item: int
    seen: int


def logs(name: str) -> Any:
    return lambda state: {"log": [name]}


def test_a_superstep_merges_by_node_name_then_its_sends_in_send_order() -> None:
    g = StateGraph(State)
    for name in ("z", "b", "a", "q", "m"):
        g.add_node(name, logs(name))
    g.set_entry_point("z").add_edge("z", "b").add_edge("z", "a")
    g.add_conditional_edges(
        "z", lambda s: [Send("q", {}), Send("m", {}), Send("q", {})], ["q", "m"]
    )
    assert g.compile().invoke({}).state["log"] == ["z", "a", "b", "q", "m", "q"]


def test_a_router_reads_its_own_nodes_writes_not_its_siblings() -> None:
    seen: list[list[str]] = []
    g = StateGraph(State)
    for name in ("start", "a", "b"):
        g.add_node(name, logs(name))
    g.set_entry_point("start").add_edge("start", "a").add_edge("start", "b")
    g.add_conditional_edges("b", lambda s: seen.append(s["log"]) or END, [END])
    run = g.compile().invoke({})
    assert seen == [["start", "b"]]  # the superstep's start plus b's write, not a's
    assert run.state["log"] == ["start", "a", "b"]


def test_a_sends_payload_is_its_tasks_whole_input() -> None:
    inputs: list[dict[str, Any]] = []
    g = StateGraph(State)
    g.add_node("split", lambda s: {"seen": 1})
    g.add_node("work", lambda s: inputs.append(dict(s)) or {"total": s["item"]})
    g.set_entry_point("split")
    g.add_conditional_edges(
        "split", lambda s: [Send("work", {"item": i}) for i in (1, 2)], ["work"]
    )
    run = g.compile().invoke({"log": ["in"]})
    assert inputs == [{"item": 1}, {"item": 2}]
    assert run.state["total"] == 3


def test_the_input_passes_through_the_reducers_and_unset_reducer_keys_read_as_defaults() -> None:
    inputs: list[dict[str, Any]] = []
    g = StateGraph(State).add_node("a", lambda s: inputs.append(dict(s)) or {"seen": s["total"]})
    run = g.set_entry_point("a").compile().invoke({"tags": ["in"], "item": 4})
    assert inputs == [{"log": [], "total": 0, "tags": ["in!"], "item": 4}]
    assert run.state == {"log": [], "total": 0, "tags": ["in!"], "item": 4, "seen": 0}


def test_a_graph_without_a_schema_keeps_its_input_as_given() -> None:
    g = StateGraph("plain", reducers={"docs": operator.add}).add_node("a", lambda s: None)
    run = g.set_entry_point("a").compile().invoke({"docs": ["x"]})
    assert run.state == {"docs": ["x"]}


def chain(length: int) -> StateGraph:
    g = StateGraph(State)
    names = [f"n{i}" for i in range(length)]
    for name in names:
        g.add_node(name, logs(name))
    g.set_entry_point(names[0])
    for source, target in itertools.pairwise(names):
        g.add_edge(source, target)
    return g


@pytest.mark.parametrize(("limit", "length", "ends"), [(3, 2, True), (3, 3, False), (1, 1, False)])
def test_a_first_invocation_ends_within_recursion_limit_minus_one_supersteps(
    limit: int, length: int, ends: bool
) -> None:
    wf = chain(length).compile(recursion_limit=limit)
    run = wf.start({})
    if ends:
        run.run()
        assert run.status == Status.COMPLETED
        return
    with pytest.raises(RecursionLimitReached, match=f"recursion_limit={limit}") as caught:
        run.run()
    assert run.status == Status.FAILED
    assert len(run.state["log"]) == min(length, limit)  # the superstep past it ran, as in LangGraph
    assert caught.value.recursion_limit == limit


def test_a_resumed_invocation_may_run_recursion_limit_plus_one_supersteps() -> None:
    wf = chain(6).compile(MemoryCheckpointer(), recursion_limit=3, interrupt_before=["n2"])
    run = wf.start({})
    run.run()
    assert (run.status, run.state["log"]) == (Status.PENDING, ["n0", "n1"])
    run.approve(by="ada")
    run.run()  # n2..n5: four supersteps, R + 1 (LangGraph 1.2.24 gives the same)
    assert (run.status, len(run.state["log"])) == (Status.COMPLETED, 6)
    longer = chain(8).compile(MemoryCheckpointer(), recursion_limit=3, interrupt_before=["n2"])
    run = longer.start({})
    run.run()
    run.approve(by="ada")
    with pytest.raises(RecursionLimitReached):
        run.run()
    assert len(run.state["log"]) == 7  # R + 2 supersteps ran, then the limit


def test_recursion_limit_must_be_a_positive_int() -> None:
    from agentnb import DefinitionError

    with pytest.raises(DefinitionError, match="recursion_limit must be a positive int"):
        chain(2).compile(recursion_limit=0)


def stored_before_the_semantics(path: Any, run_id: str) -> None:
    """Rewrite a run's last checkpoint as an agentnb before LangGraph's semantics stored
    it: its frontier without the ``semantics`` mark."""
    import json
    import sqlite3

    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT seq, tasks FROM entries WHERE run_id = ? AND tasks IS NOT NULL", (run_id,)
        ).fetchall()
        assert rows
        for seq, tasks in rows:
            frontier = json.loads(tasks)
            del frontier["semantics"]
            db.execute(
                "UPDATE entries SET tasks = ? WHERE run_id = ? AND seq = ?",
                (json.dumps(frontier), run_id, seq),
            )


def test_a_parallel_superstep_stored_before_the_semantics_is_refused_not_reinterpreted(
    tmp_path: Any,
) -> None:
    from agentnb import LegacySuperstep, SqliteCheckpointer

    g = StateGraph(State)
    for name in ("start", "b", "a"):  # declared b before a: it merged b first then
        g.add_node(name, logs(name))
    g.set_entry_point("start").add_edge("start", "a").add_edge("start", "b")
    path = tmp_path / "old.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = g.compile(store, interrupt_before=["b"]).start({})
        run.run()
        assert [t.task_id for t in run.pending()] == ["b"]
    stored_before_the_semantics(path, run.run_id)
    with SqliteCheckpointer(path) as store:
        old = g.compile(store, interrupt_before=["b"]).attach(run.run_id)
        old.approve(by="ada", task="b")
        with pytest.raises(LegacySuperstep, match=r"run.fork\(step=0\)") as caught:
            old.run()
        assert caught.value.tasks == ["a", "b"]
        assert old.record.status == Status.APPROVED  # left as it was: nothing decided anew
        assert old.state == {"log": ["start"], "total": 0, "tags": []}


def test_a_single_send_stored_before_the_semantics_keeps_its_meaning(tmp_path: Any) -> None:
    from agentnb import SqliteCheckpointer

    g = StateGraph(State)
    g.add_node("split", lambda s: {"seen": 7})
    g.add_node("work", lambda s: {"total": s["item"] + s["seen"]})
    g.set_entry_point("split")
    g.add_conditional_edges("split", lambda s: [Send("work", {"item": 1})], ["work"])
    path = tmp_path / "old.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = g.compile(store).start({})
        run.step()  # split ran; the Send waits
    stored_before_the_semantics(path, run.run_id)
    with SqliteCheckpointer(path) as store:
        old = g.compile(store).attach(run.run_id)
        old.run()  # its payload was laid over the state then: so it is now
        assert (old.status, old.state["total"]) == (Status.COMPLETED, 8)


calls: list[tuple[Any, Any]] = []


def joined(current: Any, new: Any) -> Any:
    calls.append((current, new))
    return [*current, *new]


class Loose(TypedDict, total=False):
    anything: Annotated[Any, joined]  # Any() cannot be built: no default
    maybe: Annotated[list[str] | None, joined]


def test_a_reducer_key_without_a_default_takes_its_first_write_as_it_is() -> None:
    calls.clear()
    seen: list[dict[str, Any]] = []
    g = StateGraph(Loose).add_node(
        "a", lambda s: seen.append(dict(s)) or {"anything": ["a"], "maybe": ["m"]}
    )
    g.add_node("b", lambda s: {"anything": ["b"]})
    g.set_entry_point("a").add_edge("a", "b")
    run = g.compile().invoke({})
    assert seen == [{}]  # unset, not None
    assert run.state == {"anything": ["a", "b"], "maybe": ["m"]}
    assert calls == [(["a"], ["b"])]  # the first write was not reduced with None


class Child(TypedDict, total=False):
    tags: Annotated[list[str], tagged]
    total: Annotated[int, operator.add]
    x: int


def test_a_subgraphs_input_passes_through_the_childs_reducers() -> None:
    seen: list[dict[str, Any]] = []
    child = StateGraph(Child).add_node("inner", lambda s: seen.append(dict(s)) or {"x": 1})
    child.set_entry_point("inner")
    g = StateGraph(State).add_node("first", lambda s: {"tags": ["a"], "total": 2})
    g.add_node("sub", child).set_entry_point("first").add_edge("first", "sub")
    run = g.compile().invoke({"tags": ["in"]})
    # LangGraph 1.2.24 gives the child the same tags and total (and no log): the
    # parent's own tagged reducer marked them once, the child's input reducer again.
    assert seen == [{"tags": ["in!!", "a!!"], "total": 2, "log": []}]  # (keys: not enforced)
    # The parent gets the keys the child changed, set as they are (README: not aliased).
    assert run.state == {"log": [], "total": 2, "tags": ["in!", "a!"], "x": 1}
