"""Parallel branches at run time: fan-out, joins, merges, conflicts and map-reduce."""

from __future__ import annotations

import asyncio
import operator
import threading
from collections import Counter
from typing import Any

import pytest

from agentnb import (
    END,
    Checkpointer,
    ConflictingUpdate,
    EventType,
    NodeContext,
    NodeFailed,
    Send,
    StateGraph,
    Status,
)
from tests.conftest import Driver

DEADLINE = 10.0  # seconds a branch waits for its sibling before the test fails


def diamond(b: Any, c: Any, **compile_args: Any) -> Any:
    """a -> (b, c) -> d, with d joining both."""
    g = StateGraph("diamond", reducers={"total": operator.add})
    g.add_node("a", lambda s: {"total": 1})
    g.add_node("b", b)
    g.add_node("c", c)
    g.add_node("d", lambda s: {"seen": s["total"]})
    g.set_entry_point("a")
    g.add_edge("a", "b").add_edge("a", "c").add_edge(["b", "c"], "d")
    return g.compile(**compile_args)


def test_async_branches_run_concurrently_on_the_event_loop(drive: Driver) -> None:
    started: dict[str, asyncio.Event] = {}

    def branch(name: str, other: str) -> Any:
        async def node(state: dict[str, Any]) -> dict[str, Any]:
            started.setdefault(name, asyncio.Event()).set()
            # Waits for its sibling to have started: only concurrent branches get past.
            await asyncio.wait_for(started.setdefault(other, asyncio.Event()).wait(), DEADLINE)
            return {"total": 10}

        return node

    run = diamond(branch("b", "c"), branch("c", "b")).start({"total": 0})
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state == {"total": 21, "seen": 21}


def test_sync_branches_run_concurrently_in_the_thread_pool(drive: Driver) -> None:
    barrier = threading.Barrier(2, timeout=DEADLINE)

    def node(state: dict[str, Any]) -> dict[str, Any]:
        barrier.wait()  # both branches must be inside their node at once
        return {"total": 5}

    run = diamond(node, node).start({"total": 0})
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state["total"] == 11


def test_max_concurrency_bounds_how_many_tasks_run_at_once(drive: Driver) -> None:
    lock = threading.Lock()
    inside = Counter[str]()

    def node(state: dict[str, Any]) -> dict[str, Any]:
        with lock:
            inside["now"] += 1
            inside["most"] = max(inside["most"], inside["now"])
        with lock:
            inside["now"] -= 1
        return {"results": [state["item"]]}

    g = StateGraph("bounded", reducers={"results": operator.add})
    g.add_node("split", lambda s: None)
    g.add_node("work", node)
    g.set_entry_point("split")
    g.add_conditional_edge(
        "split", lambda s: [Send("work", {"item": i}) for i in range(20)], ["work"]
    )
    run = g.compile(max_concurrency=1).start({"results": []})
    drive.run(run)
    assert inside["most"] == 1
    assert run.state["results"] == list(range(20))


def test_a_join_runs_once_after_both_branches_even_when_one_is_longer(drive: Driver) -> None:
    calls = Counter[str]()

    def record(name: str) -> Any:
        def node(state: dict[str, Any]) -> dict[str, Any]:
            calls[name] += 1
            return {"path": [name]}

        return node

    g = StateGraph("join", reducers={"path": operator.add})
    for name in ("a", "b", "c", "c2", "d"):
        g.add_node(name, record(name))
    g.set_entry_point("a")
    g.add_edge("a", "b").add_edge("a", "c").add_edge("c", "c2").add_edge(["b", "c2"], "d")
    run = g.compile().start({"path": []})
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert calls == {"a": 1, "b": 1, "c": 1, "c2": 1, "d": 1}
    assert run.state["path"] == ["a", "b", "c", "c2", "d"]
    assert run.steps == 4  # a | b c | c2 | d


def test_a_node_reached_by_several_branches_in_one_superstep_runs_once(drive: Driver) -> None:
    calls = Counter[str]()

    def counted(name: str) -> Any:
        def node(state: dict[str, Any]) -> None:
            calls[name] += 1

        return node

    g = StateGraph("merge-point")
    for name in ("a", "b", "c", "d"):
        g.add_node(name, counted(name))
    g.set_entry_point("a")
    g.add_edge("a", "b").add_edge("a", "c").add_edge("b", "d").add_edge("c", "d")
    run = g.compile().start({})
    drive.run(run)
    assert calls["d"] == 1
    assert run.status == Status.COMPLETED


def test_deltas_merge_in_declaration_order_whatever_order_branches_finish(drive: Driver) -> None:
    c_done = asyncio.Event

    done: dict[str, Any] = {}

    async def b(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.wait_for(done.setdefault("c", c_done()).wait(), DEADLINE)
        return {"messages": ["from b"]}

    async def c(state: dict[str, Any]) -> dict[str, Any]:
        done.setdefault("c", c_done()).set()
        return {"messages": ["from c"]}

    run = diamond(b, c).start({"messages": [], "total": 0})
    drive.run(run)
    assert run.state["messages"] == ["from b", "from c"]
    finished = [e.node for e in run.events if e.type == EventType.STATE_UPDATE]
    assert finished == ["a", "b", "c", "d"]  # the log, too, is in merge order


def test_two_branches_writing_a_key_without_reducer_fail_the_run_saving_nothing(
    drive: Driver, store: Checkpointer
) -> None:
    run = diamond(lambda s: {"answer": 1}, lambda s: {"answer": 2}, checkpointer=store).start(
        {"total": 0}
    )
    with pytest.raises(ConflictingUpdate) as caught:
        drive.run(run)
    assert caught.value.key == "answer"
    assert caught.value.tasks == ("b", "c")
    assert run.status == Status.FAILED
    assert [cp.step for cp in run.history()] == [0, 1]  # the superstep of b and c: not saved
    assert run.state == {"total": 1}
    failed = run.events[-1]
    assert failed.type == EventType.FAILED
    assert failed.payload["error"]["type"] == "ConflictingUpdate"


def test_a_thousand_sends_map_and_reduce_in_one_superstep(
    drive: Driver, store: Checkpointer
) -> None:
    g = StateGraph("map-reduce", reducers={"total": operator.add, "squares": operator.add})
    g.add_node("split", lambda s: None)
    g.add_node("square", lambda s: {"total": s["n"] ** 2, "squares": [s["n"] ** 2]})
    g.add_node("report", lambda s: {"count": len(s["squares"])})
    g.set_entry_point("split")
    g.add_conditional_edge(
        "split", lambda s: [Send("square", {"n": n}) for n in range(s["size"])], ["square"]
    )
    g.add_edge("square", "report")
    run = g.compile(store).start({"size": 1000, "total": 0, "squares": []})
    drive.run(run)
    state = run.state
    assert state["total"] == sum(n * n for n in range(1000))
    assert state["squares"] == [n * n for n in range(1000)]  # Send order, not finish order
    assert state["count"] == 1000
    assert "n" not in state
    assert run.steps == 3


def test_step_runs_one_superstep_and_says_which_tasks_ran(drive: Driver) -> None:
    run = diamond(lambda s: {"total": 2}, lambda s: {"total": 3}).start({"total": 0})
    first = drive.step(run)
    assert (first.node, first.tasks, first.next) == ("a", {"a": {"total": 1}}, "b")
    second = drive.step(run)
    assert second.tasks == {"b": {"total": 2}, "c": {"total": 3}}
    assert second.delta is None
    assert second.next == "d"
    assert "'b', 'c'" in str(second)
    assert run.tasks == ["d"]
    assert drive.step(run).tasks == {"d": {"seen": 6}}
    assert run.state == {"total": 6, "seen": 6}


def test_a_failing_branch_fails_the_run_and_cancels_its_siblings(drive: Driver) -> None:
    cancelled = []

    async def slow(state: dict[str, Any]) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    def broken(state: dict[str, Any]) -> None:
        raise ValueError("no such document")

    run = diamond(slow, broken).start({"total": 0})
    with pytest.raises(NodeFailed, match="no such document") as caught:
        drive.run(run)
    assert caught.value.node == "c"
    assert cancelled == [True]
    assert run.status == Status.FAILED
    assert run.record.error["node"] == "c"


def test_send_tasks_have_their_own_ids_and_idempotency_keys(drive: Driver) -> None:
    keys: dict[str, str] = {}

    def work(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        keys[ctx.task_id] = ctx.idempotency_key
        return {"done": [ctx.once("pay", lambda: state["n"])]}

    g = StateGraph("ids", reducers={"done": operator.add})
    g.add_node("split", lambda s: None).add_node("work", work)
    g.set_entry_point("split")
    g.add_conditional_edge("split", lambda s: [Send("work", {"n": n}) for n in (7, 8)], ["work"])
    run = g.compile().start({"done": []})
    drive.run(run)
    assert keys == {"work[0]": f"{run.run_id}:1:work[0]", "work[1]": f"{run.run_id}:1:work[1]"}
    assert run.state["done"] == [7, 8]
    starts = [e.payload.get("task") for e in run.events if e.type == EventType.NODE_START]
    assert starts == [None, "work[0]", "work[1]"]


def test_a_fan_out_update_names_every_branch_it_leads_to(drive: Driver) -> None:
    run = diamond(lambda s: None, lambda s: None).start({"total": 0})
    drive.run(run)
    update = next(e for e in run.events if e.type == EventType.STATE_UPDATE)
    assert update.payload["next"] == "b"
    assert update.payload["to"] == ["b", "c"]


def test_an_interrupt_before_a_branch_pauses_the_superstep_until_approved(drive: Driver) -> None:
    g = StateGraph("gated", reducers={"total": lambda a, b: (a or 0) + b})
    g.add_node("a", lambda s: None)
    g.add_node("b", lambda s: {"total": 1}).add_node("c", lambda s: {"total": 2})
    g.set_entry_point("a").add_edge("a", "b").add_edge("a", "c").add_interrupt_before("c")
    run = g.compile().start({})
    drive.run(run)
    assert (run.status, run.node) == (Status.PENDING, "c")
    run.approve(by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state == {"total": 3}


def test_branches_ending_at_end_complete_the_run_when_none_is_left(drive: Driver) -> None:
    g = StateGraph("ends")
    g.add_node("a", lambda s: None).add_node("b", lambda s: {"b": 1}).add_node("c", lambda s: None)
    g.add_node("c2", lambda s: {"c2": 1})
    g.set_entry_point("a").add_edge("a", "b").add_edge("a", "c").add_edge("b", END)
    g.add_edge("c", "c2")
    run = g.compile().start({})
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state == {"b": 1, "c2": 1}
    assert run.steps == 3


def test_the_overlay_counts_every_edge_of_a_fan_out_and_a_join(drive: Driver) -> None:
    from agentnb.render.extract import overlay_from_events

    run = diamond(lambda s: None, lambda s: None).start({"total": 0})
    drive.run(run)
    traversed = {(s, t): n for s, t, n in overlay_from_events(run.events, run.workflow).traversed}
    assert traversed == {
        ("START", "a"): 1,
        ("a", "b"): 1,
        ("a", "c"): 1,
        ("b", "d"): 1,
        ("c", "d"): 1,
        ("d", "END"): 1,
    }


def test_a_cancelled_superstep_resumes_without_rerunning_its_finished_tasks(
    store: Checkpointer,
) -> None:
    calls = Counter[str]()
    gate: dict[str, asyncio.Event] = {}

    def branch(name: str, waits: bool) -> Any:
        async def node(state: dict[str, Any]) -> dict[str, Any]:
            calls[name] += 1
            if waits and calls[name] == 1:
                await asyncio.Event().wait()  # cancelled here, the first time
            return {"total": 1}

        return node

    run = diamond(branch("b", False), branch("c", True), checkpointer=store).start({"total": 0})
    save = store.save_write

    def announce(*args: Any) -> None:
        save(*args)
        gate["saved"].set()

    store.save_write = announce  # type: ignore[method-assign]

    async def cancel_after_b() -> None:
        gate["saved"] = asyncio.Event()
        task = asyncio.ensure_future(run.arun())
        await asyncio.wait_for(gate["saved"].wait(), DEADLINE)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancel_after_b())
    assert run.status == Status.CANCELLED
    assert [w.task_id for w in store.pending_writes(run.run_id, 1)] == ["b"]
    result = run.step()
    assert (result.tasks, result.recovered) == ({"c": {"total": 1}}, ("b",))
    run.run()
    assert calls == {"b": 1, "c": 2}
    assert run.state == {"total": 3, "seen": 3}


def test_the_overlay_lights_every_node_of_the_next_superstep() -> None:
    from agentnb.render.dot import to_dot
    from agentnb.render.extract import diagram_from_run, overlay_from_events
    from agentnb.render.text import to_text

    run = diamond(lambda s: None, lambda s: None).start({"total": 0})
    run.step()  # a ran: b and c are next, together
    overlay = overlay_from_events(run.events, run.workflow)
    assert overlay.active == ("b", "c")
    dot = to_dot(diagram_from_run(run))
    lit = [line for line in dot.splitlines() if "is-current" in line]
    assert [line.split('id="')[1].split('"')[0] for line in lit] == ["node-b", "node-c"]
    assert "next: b, c" in to_text(diagram_from_run(run))


def test_a_join_shows_how_many_of_its_branches_have_arrived() -> None:
    from agentnb.render.extract import diagram_from_run, overlay_from_events
    from agentnb.render.text import to_text

    g = StateGraph("join")
    for name in ("a", "b", "c", "c2", "d"):
        g.add_node(name, lambda s: None)
    g.set_entry_point("a")
    g.add_edge("a", "b").add_edge("a", "c").add_edge("c", "c2").add_edge(["b", "c2"], "d")
    run = g.compile().start({})
    run.step()
    run.step()  # b arrived at the join; c2 is still to come
    assert overlay_from_events(run.events, run.workflow).waiting == (("d", 1, 2),)
    assert "d waits: 1 of 2 arrived" in to_text(diagram_from_run(run))
    run.step()  # c2 arrives: d is triggered
    assert overlay_from_events(run.events, run.workflow).waiting == ()


def test_a_send_fan_out_is_one_edge_with_a_count(drive: Driver) -> None:
    from agentnb.render.extract import overlay_from_events

    g = StateGraph("fan", reducers={"n": operator.add})
    g.add_node("split", lambda s: None).add_node("work", lambda s: {"n": 1})
    g.set_entry_point("split")
    g.add_conditional_edge("split", lambda s: [Send("work", {}) for _ in range(7)], ["work"])
    run = g.compile().start({"n": 0})
    drive.run(run)
    traversed = {(s, t): n for s, t, n in overlay_from_events(run.events, run.workflow).traversed}
    assert traversed[("split", "work")] == 7
    assert traversed[("work", "END")] == 7


def test_the_timeline_gives_each_branch_its_own_overlapping_lane() -> None:
    from agentnb.render.timeline_bars import bars_from_events

    started = {name: asyncio.Event() for name in ("b", "c")}

    def branch(name: str, other: str) -> Any:
        async def node(state: dict[str, Any]) -> None:
            started[name].set()
            await asyncio.wait_for(started[other].wait(), DEADLINE)

        return node

    run = diamond(branch("b", "c"), branch("c", "b")).start({"total": 0})
    asyncio.run(run.arun())
    bars = {bar.node: bar for bar in bars_from_events(run.events)}
    assert [(b.node, b.outcome) for b in bars.values()] == [
        ("a", "ok"),
        ("b", "ok"),
        ("c", "ok"),
        ("d", "ok"),
    ]
    assert bars["b"].start < bars["c"].end
    assert bars["c"].start < bars["b"].end  # the two lanes overlap in time
