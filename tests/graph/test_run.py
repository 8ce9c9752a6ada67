"""Runtime semantics, each checked through the sync API and its async twin (``drive``)."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentnb import (
    END,
    ApprovalNotPending,
    Checkpointer,
    IncompatibleWorkflow,
    InvalidDecision,
    InvalidState,
    MemoryCheckpointer,
    NodeContext,
    NodeFailed,
    RoutingError,
    RunBusy,
    RunNotFound,
    SqliteCheckpointer,
    StateGraph,
    Status,
    StepBudgetExhausted,
)
from agentnb.errors import LeaseLost
from agentnb.examples import build_refund_workflow
from agentnb.testing import capture_events
from tests.conftest import Driver

calls: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset_calls() -> None:
    calls.clear()


def counting(name: str, delta: dict[str, Any] | None = None) -> Any:
    def node(state: dict[str, Any]) -> dict[str, Any] | None:
        calls[name] += 1
        return delta

    node.__name__ = name
    return node


def chain(*names: str, store: Checkpointer | None = None, **compile_args: Any) -> StateGraph:
    g = StateGraph("chain")
    for name in names:
        g.add_node(name, counting(name, {name: True}))
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    return g


def paused(wf: Any) -> str:
    """Stream a new run to its first pause; return its id."""
    events = list(wf.stream({}))
    assert events[-1].type == "interrupted"
    return events[-1].run_id  # type: ignore[no-any-return]


def types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


# -- the seed's scenario -------------------------------------------------------------------


def test_refund_run_pauses_before_approval_and_completes_once_approved(
    store: Checkpointer, drive: Driver
) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    events = list(wf.stream({"messages": []}))
    assert types(events) == [
        "run_started",
        "node_start",
        "state_update",
        "interrupted",
    ]
    assert [e.seq for e in events] == [1, 2, 3, 4]
    run = wf.attach(events[0].run_id)
    assert (run.status, run.node, refunds) == (Status.PENDING, "human_approval", [])
    assert events[-1].payload["digest"] == run.pending_digest
    run.approve(by="ada")
    assert run.status == Status.APPROVED
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert refunds == [1000]
    assert run.state["messages"][-1] == {"role": "tool", "content": "refunded 1000"}
    persisted = store.events(run.run_id)
    assert [e.seq for e in persisted] == list(range(1, len(persisted) + 1))
    assert types(persisted)[-7:] == [
        "approved",
        "node_start",
        "state_update",
        "node_start",
        "effect",
        "state_update",
        "completed",
    ]
    assert run.state["receipt"] == "re_1"


def test_small_refunds_need_no_approval(store: Checkpointer) -> None:
    refunds: list[int] = []
    events = list(build_refund_workflow(store, refunds).stream({"requested": 100}))
    assert events[-1].type == "completed"
    assert refunds == [100]


def test_resume_with_rejection_never_runs_the_node(store: Checkpointer) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    run_id = paused(wf)
    events = list(wf.resume(run_id, "rejected", by="ada", comment="no"))
    assert types(events) == ["rejected"]
    assert events[0].payload["comment"] == "no"
    assert wf.attach(run_id).status == Status.REJECTED
    assert wf.attach(run_id).step().node is None
    assert refunds == []


def test_resume_refuses_an_invalid_decision_without_approving(store: Checkpointer) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    run_id = paused(wf)
    for bad in ("yes", "approve", "APPROVED", ""):
        with pytest.raises(InvalidDecision):
            wf.resume(run_id, bad, by="ada")
    with pytest.raises(InvalidDecision):
        wf.aresume(run_id, "ok", by="ada")
    assert wf.attach(run_id).status == Status.PENDING
    assert refunds == []


def test_async_resume_streams_the_decision_then_the_rest(store: Checkpointer) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)

    async def scenario() -> list[str]:
        events = [e async for e in wf.astream({})]
        return [e.type async for e in wf.aresume(events[0].run_id, "approved", by="ada")]

    assert asyncio.run(scenario())[:2] == ["approved", "node_start"]
    assert refunds == [1000]


def test_a_duplicate_approval_is_refused_and_the_refund_happens_once(
    store: Checkpointer,
) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    run_id = paused(wf)
    list(wf.resume(run_id, "approved", by="ada"))
    with pytest.raises(ApprovalNotPending):
        list(wf.resume(run_id, "approved", by="ada"))
    assert refunds == [1000]


def test_an_approval_covers_one_boundary_only(store: Checkpointer, drive: Driver) -> None:
    g = chain("a", "b", "c")
    g.add_interrupt_before("b", "c")
    run = g.compile(store).start({})
    drive.run(run)
    assert (run.status, run.node) == (Status.PENDING, "b")
    run.approve(by="ada")
    drive.run(run)
    assert (run.status, run.node, calls["b"], calls["c"]) == (Status.PENDING, "c", 1, 0)
    run.approve(by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert dict(calls) == {"a": 1, "b": 1, "c": 1}


def test_interrupt_after_pauses_once_the_node_has_run(store: Checkpointer, drive: Driver) -> None:
    g = chain("a", "b").add_interrupt_after("a")
    run = g.compile(store).start({})
    drive.run(run)
    assert (run.status, run.node, calls["a"], calls["b"]) == (Status.PENDING, "b", 1, 0)
    assert run.events[-1].payload["after"] == "a"
    run.approve(by="ada")
    drive.run(run)
    assert run.status == Status.COMPLETED


def test_interrupt_before_the_entry_node_pauses_before_anything_runs(
    store: Checkpointer, drive: Driver
) -> None:
    run = chain("a", "b").add_interrupt_before("a").compile(store).start({"x": 1})
    result = drive.step(run)
    assert (result.node, result.status, result.next) == (None, Status.PENDING, "a")
    assert run.pending_digest
    assert calls["a"] == 0


# -- stepping --------------------------------------------------------------------------


def test_start_runs_nothing_and_step_runs_exactly_one_node(
    store: Checkpointer, drive: Driver
) -> None:
    run = chain("a", "b", "c").compile(store).start({"n": 1})
    assert (run.status, run.node, run.steps, sum(calls.values())) == ("running", "a", 0, 0)
    assert types(run.events) == ["run_started"]
    first = drive.step(run)
    assert (first.node, first.next, first.status, first.delta) == ("a", "b", "running", {"a": True})
    assert types(first.events) == ["node_start", "state_update"]
    assert dict(calls) == {"a": 1}
    drive.step(run)
    last = drive.step(run)
    assert (last.node, last.next, last.status) == ("c", END, Status.COMPLETED)
    assert types(last.events)[-1] == "completed"
    assert drive.step(run).node is None
    assert dict(calls) == {"a": 1, "b": 1, "c": 1}
    assert [cp.step for cp in run.history()] == [0, 1, 2, 3]
    assert run.history()[1].state == {"n": 1, "a": True}
    assert "ran 'c'" in str(last)


def test_a_run_reattached_after_a_restart_never_reruns_completed_nodes(
    tmp_path: Path, drive: Driver
) -> None:
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = chain("a", "b", "c").compile(store).start({})
        drive.step(run)
        drive.step(run)
        run_id = run.run_id
    with SqliteCheckpointer(path) as store:
        again = chain("a", "b", "c").compile(store).attach(run_id)
        assert (again.node, again.steps) == ("c", 2)
        drive.run(again)
        assert again.state == {"a": True, "b": True, "c": True}
    assert dict(calls) == {"a": 1, "b": 1, "c": 1}


def test_attach_refuses_unknown_runs_and_changed_workflows(store: Checkpointer) -> None:
    wf = chain("a", "b").add_interrupt_before("b").compile(store)
    run = wf.start({})
    run.run()
    with pytest.raises(RunNotFound):
        wf.attach("missing")
    with pytest.raises(IncompatibleWorkflow, match="next node 'b' is not in"):
        chain("a", "c").compile(store).attach(run.run_id)
    with pytest.raises(IncompatibleWorkflow, match="changed since the run started"):
        chain("a", "b").compile(store).attach(run.run_id)


# -- state -----------------------------------------------------------------------------


def test_nodes_get_a_copy_and_deltas_merge_through_reducers(
    store: Checkpointer, drive: Driver
) -> None:
    def mutate(state: dict[str, Any]) -> dict[str, Any]:
        state["items"].append("sneaky")
        state["total"] = 999
        return {"messages": [{"role": "a"}], "total": 5, "pair": (1, 2)}

    def more(state: dict[str, Any]) -> dict[str, Any]:
        assert state["pair"] == [1, 2]  # stored as JSON: what a restarted worker would see
        return {"messages": {"role": "b"}, "total": 7}

    g = StateGraph("s", reducers={"total": lambda old, new: (old or 0) + new})
    g.add_node("mutate", mutate).add_node("more", more).add_edge("mutate", "more")
    run = g.set_entry_point("mutate").compile(store).start({"items": [], "messages": []})
    drive.run(run)
    assert run.state == {
        "items": [],
        "messages": [{"role": "a"}, {"role": "b"}],
        "total": 12,
        "pair": [1, 2],
    }


@pytest.mark.parametrize(
    ("delta", "path"),
    [
        ({"when": __import__("datetime").date(2024, 1, 1)}, "delta of 'a'['when']"),
        ({"deep": {"x": [1, {2, 3}]}}, "delta of 'a'['deep']['x'][1]"),
        ({"n": float("nan")}, "delta of 'a'['n']"),
        ({"d": {1: "int key"}}, "delta of 'a'['d']"),
        ({1: "int key at the top"}, "delta of 'a'"),
        ({"n": float("inf"), "ok": "text"}, "delta of 'a'['n']"),
    ],
)
def test_a_non_json_delta_fails_the_run_with_its_path_and_saves_nothing(
    store: Checkpointer, drive: Driver, delta: dict[str, Any], path: str
) -> None:
    g = StateGraph("j").add_node("a", lambda s: delta).set_entry_point("a")
    run = g.compile(store).start({"keep": 1})
    with pytest.raises(InvalidState) as err:
        drive.step(run)
    assert err.value.path == path
    assert run.status == Status.FAILED
    assert [cp.step for cp in run.history()] == [0]
    assert run.state == {"keep": 1}


def test_a_non_json_initial_state_creates_no_run(store: Checkpointer) -> None:
    wf = chain("a").compile(store)
    with pytest.raises(InvalidState, match=r"state\['x'\]"):
        wf.start({"x": object()})
    assert store.list_runs() == []


# -- failures --------------------------------------------------------------------------


def test_a_failing_node_fails_the_run_and_raises_node_failed_from_the_original(
    store: Checkpointer, drive: Driver
) -> None:
    def boom(state: dict[str, Any]) -> None:
        raise ZeroDivisionError("no refunds on Sundays")

    g = chain("a").add_node("boom", boom).add_edge("a", "boom")
    run = g.compile(store).start({})
    with pytest.raises(NodeFailed) as err:
        drive.run(run)
    assert isinstance(err.value.__cause__, ZeroDivisionError)
    assert (err.value.node, err.value.step) == ("boom", 1)
    record = run.record
    assert record.status == Status.FAILED
    assert record.error == {
        "type": "NodeFailed",
        "message": str(err.value),
        "node": "boom",
    }
    assert run.events[-1].payload == {
        "error": {"type": "ZeroDivisionError", "message": "no refunds on Sundays"},
        "raised": {"type": "NodeFailed", "message": str(err.value)},
    }
    assert run.state == {"a": True}
    assert drive.step(run).node is None


def test_a_sync_node_handing_back_an_awaitable_is_awaited_and_its_failure_is_node_failed(
    store: Checkpointer, drive: Driver
) -> None:
    async def later(n: int) -> dict[str, Any]:
        await asyncio.sleep(0)
        if n < 0:
            raise ValueError("negative")
        return {"n": n + 1}

    g = StateGraph("x").add_node("a", lambda s: later(s["n"])).set_entry_point("a")
    run = g.compile(store).start({"n": 1})
    assert drive.step(run).delta == {"n": 2}
    failing = g.compile(store).start({"n": -1})
    with pytest.raises(NodeFailed) as err:
        drive.run(failing)
    assert isinstance(err.value.__cause__, ValueError)
    assert failing.status == Status.FAILED


def test_a_node_returning_a_non_dict_fails_the_run(store: Checkpointer, drive: Driver) -> None:
    run = StateGraph("x").add_node("a", lambda s: 42).set_entry_point("a").compile(store).start()
    with pytest.raises(NodeFailed, match="returns a dict of changes or None, not int"):
        drive.step(run)


def test_a_router_returning_an_undeclared_target_fails_cleanly(
    store: Checkpointer, drive: Driver
) -> None:
    g = chain("a", "b").add_node("c", counting("c"))
    g.edges.pop("a")
    g.add_conditional_edge("a", lambda s: "elsewhere", {"go": "b", "alt": "c"})
    run = g.compile(store).start({})
    with pytest.raises(RoutingError, match="'elsewhere', which is not a declared target"):
        drive.step(run)
    assert run.status == Status.FAILED
    assert [cp.step for cp in run.history()] == [0]
    assert run.state == {}


def test_the_step_budget_fails_a_looping_run(store: Checkpointer, drive: Driver) -> None:
    g = StateGraph("loop")
    g.add_node("tick", lambda s: {"n": s.get("n", 0) + 1})
    g.set_entry_point("tick").add_conditional_edge("tick", lambda s: "tick", ["tick", END])
    run = g.compile(store, max_steps=5).start({})
    with pytest.raises(StepBudgetExhausted, match="max_steps=5"):
        drive.run(run)
    assert run.status == Status.FAILED
    assert run.state == {"n": 5}
    assert run.record.error is not None
    assert run.record.error["type"] == "StepBudgetExhausted"


# -- context, async nodes, custom events ---------------------------------------------------


def test_async_nodes_and_ctx_are_supported(store: Checkpointer, drive: Driver) -> None:
    seen: list[tuple[str, int, str, str]] = []

    async def fetch(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        await asyncio.sleep(0)
        seen.append((ctx.run_id, ctx.step, ctx.node, ctx.idempotency_key))
        ctx.emit("tool_call", {"tool": "search"})
        return {"fetched": True}

    g = StateGraph("ctx").add_node("first", lambda s: None).add_node("fetch", fetch)
    run = g.set_entry_point("first").add_edge("first", "fetch").compile(store).start({})
    drive.run(run)
    assert seen == [(run.run_id, 1, "fetch", f"{run.run_id}:1:fetch")]
    assert types(run.events)[-4:] == ["node_start", "tool_call", "state_update", "completed"]
    assert run.events[-3].payload == {"data": [{"tool": "search"}], "count": 1}


def test_custom_events_cannot_impersonate_built_in_ones(store: Checkpointer) -> None:
    def bad(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.emit("completed", {})

    run = StateGraph("e").add_node("a", bad).set_entry_point("a").compile(store).start()
    with pytest.raises(NodeFailed, match="custom event types"):
        run.step()


# -- cancellation, concurrency -------------------------------------------------------------


def test_cancelling_a_run_records_cancelled_and_it_can_continue(store: Checkpointer) -> None:
    started = asyncio.Event()

    async def slow(state: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(3600)
        return {"never": True}

    attempts = Counter[str]()

    async def scenario() -> Any:
        g = chain("a").add_node("slow", slow).add_edge("a", "slow")
        run = g.compile(store).start({})
        task = asyncio.create_task(run.arun())
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        attempts["cancelled"] += 1
        return run

    run = asyncio.run(scenario())
    assert attempts["cancelled"] == 1
    assert (run.status, run.node, run.steps) == (Status.CANCELLED, "slow", 1)
    assert run.events[-1].type == "cancelled"
    assert run.state == {"a": True}
    # Continue with a workflow whose slow node now finishes.
    g = chain("a").add_node("slow", lambda s: {"done": True}).add_edge("a", "slow")
    again = g.compile(store).attach(run.run_id)
    again.run()
    assert again.status == Status.COMPLETED
    assert again.state == {"a": True, "done": True}


def test_two_handles_never_drive_one_run_at_once(store: Checkpointer) -> None:
    release = asyncio.Event()
    entered = asyncio.Event()

    async def wait(state: dict[str, Any]) -> None:
        entered.set()
        await release.wait()

    async def scenario() -> None:
        wf = StateGraph("w").add_node("wait", wait).set_entry_point("wait").compile(store)
        first = wf.start({})
        second = wf.attach(first.run_id)
        task = asyncio.create_task(first.astep())
        await asyncio.wait_for(entered.wait(), 10)
        with pytest.raises(RunBusy):
            await second.astep()
        release.set()
        await task
        assert first.status == Status.COMPLETED

    asyncio.run(scenario())


def test_a_worker_fenced_out_mid_step_cannot_save_its_step(store: Checkpointer) -> None:
    entered = asyncio.Event()
    release = asyncio.Event()

    async def wait(state: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        await release.wait()
        return {"stale": True}

    async def scenario() -> None:
        g = StateGraph("f").add_node("wait", wait).set_entry_point("wait")
        wf = g.compile(store, lease_seconds=0.05)
        run = wf.start({})
        task = asyncio.create_task(run.astep())
        await asyncio.wait_for(entered.wait(), 10)
        await asyncio.sleep(0.1)  # the lease expiry is what is under test
        store.acquire(run.run_id, "other-host:1:x", lease_seconds=60)
        release.set()
        with pytest.raises(LeaseLost):
            await task
        assert run.state == {}
        assert run.record.lease_owner == "other-host:1:x"

    asyncio.run(scenario())


def test_listeners_see_every_saved_event_once_and_cannot_break_a_run(
    store: Checkpointer,
) -> None:
    wf = build_refund_workflow(store)
    with capture_events(wf) as captured:
        run = wf.start({})
        run.run()
        run.approve(by="ada")
        run.run()
    assert captured.events == run.events

    def broken(event: Any) -> None:
        raise RuntimeError("metrics bug")

    wf.subscribe(broken)
    with pytest.warns(RuntimeWarning, match="metrics bug"):
        wf.start({"requested": 5}).run()
    assert wf.runs(Status.COMPLETED)


def test_a_fork_replays_from_a_past_step_without_touching_the_original(
    store: Checkpointer, drive: Driver
) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)
    original = wf.start({"requested": 1000})
    drive.run(original)
    original.approve(by="ada")
    drive.run(original)
    assert refunds == [1000]
    fork = original.fork(1, update={"amount": 200}, run_id="smaller")
    assert (fork.run_id, fork.node, fork.steps, fork.status) == (
        "smaller",
        "human_approval",
        1,
        "running",
    )
    assert fork.state["amount"] == 200
    assert fork.events[0].payload["forked_from"] == {"run_id": original.run_id, "step": 1}
    result = drive.step(fork)
    assert (result.node, result.status) == (None, Status.PENDING)  # the interrupt still holds
    fork.approve(by="ada")
    drive.run(fork)
    assert refunds == [1000, 200]
    assert original.status == Status.COMPLETED
    assert [cp.step for cp in fork.history()] == [1, 2, 3]
    with pytest.raises(InvalidState):
        original.fork(0, update={"bad": {1, 2}})


def test_async_decisions_are_twins_of_the_sync_ones(store: Checkpointer) -> None:
    refunds: list[int] = []
    wf = build_refund_workflow(store, refunds)

    async def scenario() -> list[str]:
        first, second = wf.start({}), wf.start({})
        await first.arun()
        await second.arun()
        approved = await first.aapprove(by="ada", expected_digest=first.pending_digest)
        rejected = await second.areject(by="ada", comment="no")
        with pytest.raises(ApprovalNotPending):
            await first.aapprove(by="bob")
        await first.arun()
        return [approved.decision, rejected.decision, first.status, second.status]

    assert asyncio.run(scenario()) == ["approved", "rejected", "completed", "rejected"]
    assert refunds == [1000]


def test_a_run_s_repr_reads_nothing_from_the_store() -> None:
    # (asyncio's runner formats a sync call's result, the run, twice per run.run())
    class Counting(MemoryCheckpointer):
        reads = 0

        def get_run(self, run_id: str) -> Any:
            Counting.reads += 1
            return super().get_run(run_id)

    run = build_refund_workflow(Counting(), []).start({"requested": 1000})
    run.run()
    before = Counting.reads
    text = repr(run)
    assert Counting.reads == before
    assert "pending at 'human_approval'" in text
