"""Nodes get their input copied as they read it; nothing they do reaches the run's state."""

from __future__ import annotations

import asyncio
import copy
import json
import operator
import pickle
from typing import Any

import pytest

from agentnb import END, Checkpointer, MemoryCheckpointer, Send, StateGraph
from agentnb.graph import copies
from agentnb.graph.copies import StateCopy
from tests.conftest import Driver

START = {"n": 0, "messages": [{"role": "user", "text": "hi"}], "nested": {"a": [1, {"b": [2]}]}}


def vandal(state: dict[str, Any]) -> None:
    """Everything a node could do to its input in place."""
    state["messages"].append({"role": "ai", "text": "sneaky"})
    state["messages"][0]["text"] = "changed"
    state["nested"]["a"][1]["b"].append(3)
    state["nested"]["new"] = True
    state["n"] = 99
    state["extra"] = "added"
    del state["nested"]["a"]


def check_untouched(store: Checkpointer, run: Any, n: int) -> None:
    expected = {**json.loads(json.dumps(START)), "n": n}
    assert run.state == expected
    assert store.checkpoint(run.run_id).state == expected
    assert [cp.state for cp in store.checkpoints(run.run_id)][-1] == expected


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_node_that_changes_its_input_in_place_does_not_change_the_runs_state(
    kind: str, drive: Driver
) -> None:
    def sync_node(state: dict[str, Any]) -> dict[str, Any]:
        n = state["n"]
        vandal(state)
        return {"n": n + 1}

    async def async_node(state: dict[str, Any]) -> dict[str, Any]:
        n = state["n"]
        await asyncio.sleep(0)
        vandal(state)
        return {"n": n + 1}

    store = MemoryCheckpointer()
    g = StateGraph("vandal")
    g.add_node("a", sync_node if kind == "sync" else async_node)
    g.add_node("b", sync_node if kind == "sync" else async_node)
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    run = g.compile(store).start(START)
    drive.step(run)
    check_untouched(store, run, 1)
    drive.step(run)  # the second node sees the state as stored, not what the first did
    check_untouched(store, run, 2)


def test_a_node_that_returns_its_changed_input_stores_exactly_what_it_returned(
    drive: Driver,
) -> None:
    store = MemoryCheckpointer()
    g = StateGraph("whole", reducers={"messages": lambda cur, new: new})
    g.add_node("a", lambda s: (vandal(s), s)[1])
    g.set_entry_point("a")
    g.add_edge("a", END)
    run = drive.run(g.compile(store).start(START))
    expected = {
        "n": 99,
        "messages": [{"role": "user", "text": "changed"}, {"role": "ai", "text": "sneaky"}],
        "nested": {"new": True},
        "extra": "added",
    }
    assert run.state == expected
    assert store.checkpoint(run.run_id).state == expected


def test_nodes_of_a_superstep_and_send_tasks_cannot_change_each_others_input(
    drive: Driver,
) -> None:
    seen: list[Any] = []

    def work(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(json.loads(json.dumps(state)))
        item = state["item"]
        vandal(state)
        state["item"] = -1
        return {"results": [item]}

    async def async_work(state: dict[str, Any]) -> dict[str, Any]:
        return work(state)

    store = MemoryCheckpointer()
    g = StateGraph("sends", reducers={"results": operator.add})
    g.add_node("split", lambda s: None)
    g.add_node("work", work)
    g.add_node("async_work", async_work)
    g.set_entry_point("split")
    g.add_conditional_edge(
        "split",
        lambda s: (
            [Send("work", {**s, "item": i}) for i in range(3)]  # a Send's whole input
            + [Send("async_work", {**s, "item": 10 + i}) for i in range(3)]
        ),
        ["work", "async_work"],
    )
    g.add_edge("work", END)
    g.add_edge("async_work", END)
    run = drive.run(g.compile(store, max_concurrency=3).start({**START, "results": []}))
    assert sorted(run.state["results"]) == [0, 1, 2, 10, 11, 12]
    assert all(
        {k: v for k, v in s.items() if k != "item"} == {**START, "results": []} for s in seen
    )
    assert {k: v for k, v in run.state.items() if k != "results"} == START
    assert store.checkpoint(run.run_id).state == run.state


def test_a_node_that_changes_its_returned_dict_later_does_not_change_the_state(
    drive: Driver,
) -> None:
    returned: list[dict[str, Any]] = []

    def node(state: dict[str, Any]) -> dict[str, Any]:
        returned.append({"n": state["n"] + 1, "note": "kept"})
        return returned[-1]

    store = MemoryCheckpointer()
    g = StateGraph("returned").add_node("a", node).add_node("b", node).add_edge("a", "b")
    run = g.set_entry_point("a").compile(store).start(START)
    drive.step(run)
    returned[0]["n"] = 99
    returned[0]["note"] = "changed"
    del returned[0]["note"]
    drive.run(run)
    expected = {**json.loads(json.dumps(START)), "n": 2, "note": "kept"}
    assert run.state == expected
    assert [cp.state for cp in store.checkpoints(run.run_id)][-1] == expected
    assert [cp.state["n"] for cp in store.checkpoints(run.run_id)] == [0, 1, 2]
    deltas = [e.payload["delta"] for e in store.events(run.run_id) if e.type == "state_update"]
    assert deltas == [{"n": 1, "note": "kept"}, {"n": 2, "note": "kept"}]


def test_a_router_or_a_kept_reference_cannot_change_the_state_later(drive: Driver) -> None:
    kept: list[dict[str, Any]] = []

    def route(state: dict[str, Any]) -> str:
        state["messages"].clear()
        return "b" if state["n"] < 2 else END

    def node(state: dict[str, Any]) -> dict[str, Any]:
        kept.append(state)
        return {"n": state["n"] + 1}

    store = MemoryCheckpointer()
    g = StateGraph("keep")
    g.add_node("b", node)
    g.set_entry_point("b")
    g.add_conditional_edge("b", route, ["b", END])
    run = g.compile(store).start(START)
    drive.step(run)
    for state in kept:  # long after the node returned
        vandal(state)
    drive.run(run)
    check_untouched(store, run, 2)


def test_a_custom_reducer_that_changes_the_current_value_in_place_changes_no_checkpoint(
    drive: Driver,
) -> None:
    def grow(current: list[Any], new: Any) -> list[Any]:
        current.append(new)  # in place
        return current

    store = MemoryCheckpointer()
    g = StateGraph("inplace", reducers={"log": grow})
    g.add_node("a", lambda s: {"log": s["n"], "n": s["n"] + 1})
    g.set_entry_point("a")
    g.add_conditional_edge("a", lambda s: "a" if s["n"] < 4 else END, ["a", END])
    run = drive.run(g.compile(store).start({"n": 0, "log": []}))
    assert run.state == {"n": 4, "log": [0, 1, 2, 3]}
    assert [cp.state["log"] for cp in store.checkpoints(run.run_id)] == [
        [],
        [0],
        [0, 1],
        [0, 1, 2],
        [0, 1, 2, 3],
    ]


def test_a_node_that_reads_one_key_copies_only_that_key(
    monkeypatch: pytest.MonkeyPatch, drive: Driver
) -> None:
    copied: list[Any] = []
    real = copies.json_copy

    def counting(value: Any) -> Any:
        copied.append(value)
        return real(value)

    monkeypatch.setattr(copies, "json_copy", counting)
    big = [{"text": "x" * 50, "i": i} for i in range(500)]
    g = StateGraph("lean")
    g.add_node("a", lambda s: {"n": s["n"] + 1, "messages": [{"text": "one more"}]})
    g.set_entry_point("a")
    g.add_conditional_edge("a", lambda s: "a" if s["n"] < 3 else END, ["a", END])
    run = drive.run(g.compile(MemoryCheckpointer()).start({"n": 0, "messages": big}))
    assert len(run.state["messages"]) == 503
    assert copied == []  # "n" is an int: handed over as it is; "messages" never read


def test_a_state_copy_reads_like_the_dict_it_copies() -> None:
    live = {"n": 1, "messages": [{"a": [1, 2]}], "plan": {"x": None}, "t": "s"}
    snapshot = copy.deepcopy(live)
    for make in (
        dict,
        lambda c: {**c},
        lambda c: c.copy(),
        lambda c: json.loads(json.dumps(c)),
        copy.deepcopy,
        copy.copy,
        lambda c: pickle.loads(pickle.dumps(c)),
        lambda c: dict(c.items()),
        lambda c: {k: c.get(k) for k in c},
        lambda c: {} | c,
        lambda c: c | {},
    ):
        view = StateCopy(live)
        made = make(view)
        assert made == live
        assert type(made) is dict or made is view or isinstance(made, dict)
    view = StateCopy(live, {"item": (1, 2)})
    assert view == {**live, "item": [1, 2]}
    assert repr(StateCopy(live)) == repr(live)
    assert StateCopy(live) != {"n": 2}
    assert list(StateCopy(live).values()) == list(live.values())
    assert StateCopy(live).pop("n") == 1
    assert StateCopy(live).setdefault("messages", None) == live["messages"]
    view = StateCopy(live)
    view["messages"][0]["a"].append(3)
    view.popitem()
    assert live == snapshot  # nothing done to a copy reaches what it copies


def test_a_node_gets_a_state_copy_that_copies_and_pickles_as_the_state(drive: Driver) -> None:
    live = {"n": 1, "messages": [{"a": [1, 2]}], "plan": {"x": None}, "t": "s", "f": 2.5}
    seen: list[Any] = []

    def keep(state: dict[str, Any]) -> None:
        seen.append((type(state), dict.__getitem__(state, "n"), state == live))
        seen.append(pickle.loads(pickle.dumps(state)))
        state["messages"][0]["a"].append(3)
        state["plan"]["y"] = 1

    g = StateGraph("seen")
    g.add_node("a", keep)
    g.set_entry_point("a")
    run = drive.run(g.compile(MemoryCheckpointer()).start(copy.deepcopy(live)))
    assert seen[0] == (StateCopy, 1, True)  # an atom handed over as it is, all equal
    assert type(seen[1]) is dict
    assert seen[1] == live
    assert run.state == live  # nothing done to the copy reached the state
