"""``workflow.submit`` and ``Worker``: queued runs claimed and driven, many at once, in-process.

The same behaviours across processes (races, SIGKILL, SIGTERM, a CLI decision) are in
tests/test_worker_processes.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentnb import (
    Checkpointer,
    DefinitionError,
    MemoryCheckpointer,
    SqliteCheckpointer,
    StateGraph,
    Status,
    Worker,
    Workflow,
)
from agentnb.examples import build_refund_workflow
from agentnb.fsm.chart import State, Statechart
from agentnb.fsm.timers import ManualClock


class Gauge:
    """Counts nodes in flight; ``meet(n)`` holds each until ``n`` are in flight at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.calls = 0
        self.full: asyncio.Event | None = None

    def node(self, meet: int, hold: float = 0.05) -> Callable[[dict[str, Any]], Any]:
        async def node(state: dict[str, Any]) -> dict[str, Any]:
            if self.full is None:
                self.full = asyncio.Event()
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
            if self.now >= meet:
                self.full.set()
            # A rendezvous with a deadline: the test fails (peak too low), never hangs.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.full.wait(), timeout=20)
            await asyncio.sleep(hold)
            self.now -= 1
            return {"n": state.get("n", 0) + 1}

        return node


def two_nodes(store: Checkpointer, gauge: Gauge, meet: int, name: str = "pair") -> Workflow:
    g = StateGraph(name)
    g.add_node("a", gauge.node(meet)).add_node("b", gauge.node(1, hold=0))
    return g.set_entry_point("a").add_edge("a", "b").compile(store)


def test_submit_queues_a_run_and_executes_nothing_in_the_caller(store: Checkpointer) -> None:
    gauge = Gauge()
    run = two_nodes(store, gauge, 1).submit({"n": 0})
    assert run.status == Status.QUEUED
    assert (run.steps, run.node, run.record.lease_owner) == (0, "a", None)
    assert gauge.calls == 0
    assert [e.type for e in run.events] == ["run_started"]


@pytest.mark.slow
def test_a_worker_drives_200_runs_at_once_on_one_event_loop(store: Checkpointer) -> None:
    gauge = Gauge()
    wf = two_nodes(store, gauge, meet=200)
    runs = [wf.submit({"n": 0}) for _ in range(200)]
    stats = Worker(wf, concurrency=200).run(until_idle=True)
    assert gauge.peak == 200  # every run's first node awaited at the same time
    assert (stats.claimed, stats.completed, stats.steps) == (200, 200, 400)
    assert {r.status for r in runs} == {Status.COMPLETED}
    assert {r.state["n"] for r in runs} == {2}


def test_a_claimed_run_is_driven_on_the_claims_lease_and_never_read_again(
    tmp_path: Path,
) -> None:
    calls: list[str] = []

    class Counting(SqliteCheckpointer):
        def acquire(self, *args: Any, **kwargs: Any) -> Any:
            calls.append("acquire")
            return super().acquire(*args, **kwargs)

        def get_run(self, *args: Any, **kwargs: Any) -> Any:
            calls.append("get_run")
            return super().get_run(*args, **kwargs)

    with Counting(tmp_path / "w.sqlite3") as store:
        g = StateGraph("pair").add_node("a", lambda s: {"a": 1}).add_node("b", lambda s: {})
        wf = g.set_entry_point("a").add_edge("a", "b").compile(store)
        ids = [wf.submit({}).run_id for _ in range(3)]
        calls.clear()
        assert Worker(wf, concurrency=2).run(until_idle=True).completed == 3
        assert calls == []  # the claim's row is the run; its last commit says how it ended
        # One fence per claim: the claim's lease was driven as it was, never re-acquired.
        assert [store.get_run(i).fence for i in ids] == [1, 1, 1]


def test_concurrency_caps_the_runs_driven_at_once(store: Checkpointer) -> None:
    gauge = Gauge()
    wf = two_nodes(store, gauge, meet=5)
    for _ in range(20):
        wf.submit({})
    stats = Worker(wf, concurrency=5).run(until_idle=True)
    assert gauge.peak == 5
    assert stats.completed == 20


def test_a_worker_continues_a_run_once_it_is_approved(store: Checkpointer) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    run = wf.submit({"requested": 1000})
    worker = Worker(wf)
    assert worker.run(until_idle=True).paused == 1
    assert run.status == Status.PENDING
    assert refunds == []
    assert worker.run(until_idle=True).claimed == 1  # nothing new: a pending run waits
    run.approve(by="ada")
    stats = worker.run(until_idle=True)
    assert (stats.claimed, stats.completed) == (2, 1)
    assert run.status == Status.COMPLETED
    assert len(refunds) == 1


def test_one_worker_serves_several_workflows_each_run_by_its_own_code(
    store: Checkpointer,
) -> None:
    def graph(name: str) -> Workflow:
        g = StateGraph(name).add_node("say", lambda s: {"by": name})
        return g.set_entry_point("say").compile(store)

    left, right = graph("left"), graph("right")
    stranger = StateGraph("stranger").add_node("x", lambda s: {"by": "x"})
    other = stranger.set_entry_point("x").compile(store)
    runs = [left.submit(), right.submit(), left.submit()]
    unclaimed = other.submit()
    stats = Worker(left, right).run(until_idle=True)
    assert stats.completed == 3
    assert [r.state["by"] for r in runs] == ["left", "right", "left"]
    assert unclaimed.status == Status.QUEUED  # no worker has its code


def test_a_run_of_another_shape_of_the_workflow_is_left_alone(store: Checkpointer) -> None:
    old = StateGraph("flow").add_node("a", lambda s: {}).set_entry_point("a").compile(store)
    run = old.submit()
    changed = StateGraph("flow").add_node("a", lambda s: {}).add_node("b", lambda s: {})
    new = changed.set_entry_point("a").add_edge("a", "b").compile(store)
    assert Worker(new).run(until_idle=True).claimed == 0
    assert run.status == Status.QUEUED


def test_a_failing_node_fails_its_run_and_the_worker_goes_on(store: Checkpointer) -> None:
    def boom(state: dict[str, Any]) -> dict[str, Any]:
        if state["i"] == 1:
            raise ValueError("no")
        return {"ok": True}

    wf = StateGraph("flaky").add_node("a", boom).set_entry_point("a").compile(store)
    runs = [wf.submit({"i": i}) for i in range(3)]
    stats = Worker(wf).run(until_idle=True)
    assert (stats.completed, stats.failed) == (2, 1)
    assert [r.status for r in runs] == [Status.COMPLETED, Status.FAILED, Status.COMPLETED]


def test_stop_lets_the_step_in_flight_finish_then_gives_the_run_back(
    store: Checkpointer,
) -> None:
    entered = threading.Event()
    release = threading.Event()

    async def slow(state: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        while not release.is_set():
            await asyncio.sleep(0.005)
        return {"a": 1}

    g = StateGraph("slow").add_node("a", slow).add_node("b", lambda s: {"b": 1})
    wf = g.set_entry_point("a").add_edge("a", "b").compile(store)
    run = wf.submit({})
    worker = Worker(wf)
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(worker.arun())))
    thread.start()
    assert entered.wait(10)
    worker.stop()
    release.set()
    thread.join(10)
    assert not thread.is_alive()
    record = run.record
    assert (record.status, record.step, record.node, record.lease_owner) == (
        Status.QUEUED,
        1,
        "b",
        None,
    )
    assert result[0].requeued == 1
    assert Worker(wf).run(until_idle=True).completed == 1
    assert run.state == {"a": 1, "b": 1}


def test_a_run_claimed_just_before_stop_still_runs_its_step_then_is_given_back(
    store: Checkpointer,
) -> None:
    """SIGTERM right after a claim: the claimed run is a step in flight, so the next worker
    is handed a step done, not the same run untouched."""
    holder: list[Worker] = []
    original = store.claim

    def claim_then_stop(*args: Any, **kwargs: Any) -> Any:
        claimed = original(*args, **kwargs)
        if claimed:
            holder[0].stop()  # stop lands after the claim, before the first superstep
        return claimed

    store.claim = claim_then_stop  # type: ignore[method-assign]
    g = StateGraph("two").add_node("a", lambda s: {"a": 1}).add_node("b", lambda s: {"b": 1})
    wf = g.set_entry_point("a").add_edge("a", "b").compile(store)
    run = wf.submit({})
    worker = Worker(wf)
    holder.append(worker)
    stats = worker.run()
    assert (stats.claimed, stats.requeued) == (1, 1)
    record = run.record
    assert (record.status, record.step, record.node, record.lease_owner) == (
        Status.QUEUED,
        1,
        "b",
        None,
    )


def test_a_stopped_worker_claims_nothing(store: Checkpointer) -> None:
    wf = StateGraph("idle").add_node("a", lambda s: {}).set_entry_point("a").compile(store)
    run = wf.submit()
    worker = Worker(wf)
    worker.stop()
    assert worker.run().claimed == 0
    assert run.status == Status.QUEUED


def test_the_memory_store_wakes_an_idle_worker_as_soon_as_work_is_submitted() -> None:
    store = MemoryCheckpointer()
    wf = StateGraph("woken").add_node("a", lambda s: {"x": 1}).set_entry_point("a").compile(store)
    worker = Worker(wf, poll_min=60, poll_max=60)  # polling alone would wait a minute

    async def scenario() -> Status:
        serving = asyncio.ensure_future(worker.arun())
        await asyncio.sleep(0)  # the worker finds nothing and waits
        run = wf.submit()
        deadline = time.monotonic() + 10
        while run.status != Status.COMPLETED and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        worker.stop()
        await serving
        return run.status

    assert asyncio.run(scenario()) == Status.COMPLETED


def test_a_worker_refuses_workflows_it_cannot_tell_apart(tmp_path: Path) -> None:
    a = StateGraph("same").add_node("a", lambda s: {}).set_entry_point("a")
    store = SqliteCheckpointer(tmp_path / "a.sqlite3")
    with pytest.raises(DefinitionError, match="two workflows named 'same'"):
        Worker(a.compile(store), a.compile(store))
    b = StateGraph("b").add_node("b", lambda s: {}).set_entry_point("b")
    with pytest.raises(DefinitionError, match="another checkpointer"):
        Worker(a.compile(store), b.compile(MemoryCheckpointer()))
    with pytest.raises(DefinitionError, match="concurrency"):
        Worker(a.compile(store), concurrency=0)
    with pytest.raises(DefinitionError, match="at least one workflow"):
        Worker()
    store.close()


def test_a_worker_fires_the_due_timers_of_its_machines_instances(store: Checkpointer) -> None:
    chart = Statechart(
        "light",
        [State("on", after={5: "off"}, on={"toggle": "off"}), State("off", on={"toggle": "on"})],
    )
    for name in ("kitchen", "hall"):
        chart.start(name, store=store, clock=ManualClock(0))  # due at 5.0: long past
    later = chart.start("porch", store=store)  # due in 5 s of wall time: not yet
    stats = Worker(machines=[chart], store=store).run(until_idle=True)
    assert stats.timers == 2
    for name in ("kitchen", "hall"):
        assert chart.resume(name, store=store).state == "off"
    assert later.state == "on"
    assert [t.event for t in later.timers()] == ["after.on.0"]


def test_acontinue_drives_an_approved_run_and_leaves_one_another_worker_holds(
    store: Checkpointer,
) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    mine, theirs = wf.start({"requested": 1000}), wf.start({"requested": 1000})
    for run in (mine, theirs):
        run.run()
        run.approve(by="ada")
    [held] = store.claim("another-worker", wf_graphs(wf), run_ids=[theirs.run_id])

    async def follow(run_id: str) -> list[str]:
        return [e.type async for e in Worker(wf).acontinue(run_id)]

    assert "completed" in asyncio.run(follow(mine.run_id))
    assert mine.status == Status.COMPLETED
    assert asyncio.run(follow(theirs.run_id)) == []  # claimed elsewhere: not driven here
    record = theirs.record
    assert (record.status, record.lease_owner, record.fence) == (
        Status.APPROVED,
        "another-worker",
        held.fence,
    )
    assert len(refunds) == 1


def wf_graphs(wf: Workflow) -> dict[str, str]:
    return {wf.name: wf.shape}


def test_a_node_longer_than_the_lease_keeps_its_run_the_worker_renews_it(
    store: Checkpointer,
) -> None:
    stolen: list[list[str]] = []
    expiries: set[float | None] = set()

    async def long_node(state: dict[str, Any]) -> dict[str, Any]:
        # The node outlives three renewals of its 1.5 s lease (seen in the store, not
        # assumed from a sleep), then another worker tries to claim its run.
        deadline = time.monotonic() + 60
        while len(expiries) < 4 and time.monotonic() < deadline:
            expiries.add((await asyncio.to_thread(store.get_run, run.run_id)).lease_expires)
            await asyncio.sleep(0.05)
        taken = await asyncio.to_thread(store.claim, "thief", {wf.name: wf.shape})
        stolen.append([r.run_id for r in taken])
        return {"done": True}

    g = StateGraph("long").add_node("a", long_node)
    wf = g.set_entry_point("a").compile(store, lease_seconds=1.5)
    run = wf.submit()
    stats = Worker(wf).run(until_idle=True)
    assert len(expiries) == 4  # renewed three times while the node ran
    assert stolen == [[]]  # the lease was live all along
    assert (stats.completed, stats.lost) == (1, 0)
    assert run.status == Status.COMPLETED


def test_a_run_paused_inside_a_subgraph_is_continued_by_a_worker_once_approved(
    store: Checkpointer,
) -> None:
    inner = StateGraph("inner").add_node("ask", lambda s: {"asked": True})
    inner.add_node("act", lambda s: {"acted": True})
    inner.set_entry_point("ask").add_edge("ask", "act").add_interrupt_before("act")
    outer = StateGraph("outer").add_node("sub", inner).add_node("end", lambda s: {"end": 1})
    wf = outer.set_entry_point("sub").add_edge("sub", "end").compile(store)
    run = wf.submit()
    worker = Worker(wf)
    assert worker.run(until_idle=True).paused == 1
    [child] = run.children()
    assert (run.status, child.status) == (Status.PENDING, Status.PENDING)
    run.approve(by="ada")
    assert worker.run(until_idle=True).completed == 1
    assert run.status == Status.COMPLETED
    assert run.state == {"asked": True, "acted": True, "end": 1}
    assert child.status == Status.COMPLETED


def test_a_question_answered_with_respond_is_continued_by_a_worker(store: Checkpointer) -> None:
    def ask(state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        answer = ctx.interrupt({"question": "How much?", "schema": {"type": "integer"}})
        return {"amount": answer}

    wf = StateGraph("ask").add_node("ask", ask).set_entry_point("ask").compile(store)
    run = wf.submit()
    worker = Worker(wf)
    assert worker.run(until_idle=True).paused == 1
    assert run.question is not None
    run.respond(250, by="ada")
    assert worker.run(until_idle=True).completed == 1
    assert run.state == {"amount": 250}
