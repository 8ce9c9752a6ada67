"""Poison values: what no store can keep is refused where it enters, with its key path.

A node's delta, a parallel task's, a subgraph's, a run's input, an approval's edit and an
answer: each is checked before anything is written, on every backend alike (the memory
store encodes nothing, SQLite and PostgreSQL encode UTF-8), so a run fails at the node
that returned the value — never stays ``running`` for a worker to try again and again.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

from agentnb import (
    Checkpointer,
    EventType,
    InvalidAnswer,
    InvalidDecision,
    InvalidState,
    NodeContext,
    NodeFailed,
    StateGraph,
    Status,
    StoreError,
    StoreUnavailable,
    Worker,
    Workflow,
)
from agentnb._json import dumps
from agentnb.graph.worker import ATTEMPTS
from agentnb.store.base import StepCommit
from tests.conftest import Driver


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    return loop


POISON: list[tuple[str, Any, str, str]] = [
    # (id, value of key "x", where the path ends below ['x'], what the reason says)
    ("int of 5001 digits", 10**5000, "", "5,001 digits"),
    ("negative int of 4301 digits", -(10**4300), "", "4,301 digits"),
    ("lone surrogate", "\ud83d", "", "lone surrogate"),
    ("surrogate after other text", "naïve \udc80 text", "", "lone surrogate"),
    ("surrogate in a list", ["ok", "\udfff"], "[1]", "lone surrogate"),
    ("surrogate in a key", {"\ud800": 1}, "", "key '\\ud800' holds a lone surrogate"),
    ("big int in a dict", {"n": 10**5000}, "['n']", "digits"),
    ("cycle", _cycle(), "['self']", "itself (a cycle)"),
]
IDS = [p[0] for p in POISON]


def two_steps(poison: Any, calls: Counter[str] | None = None) -> StateGraph:
    """a -> b, where b returns the poison."""
    seen = calls if calls is not None else Counter()

    def b(state: dict[str, Any]) -> dict[str, Any]:
        seen["b"] += 1
        return {"x": poison, "fine": "yes"}

    g = StateGraph("poisoned").add_node("a", lambda s: {"kept": 1}).add_node("b", b)
    return g.set_entry_point("a").add_edge("a", "b")


@pytest.mark.parametrize(("name", "poison", "tail", "reason"), POISON, ids=IDS)
def test_a_node_returning_a_poison_value_fails_the_run_at_that_node_with_the_key_path(
    store: Checkpointer, drive: Driver, name: str, poison: Any, tail: str, reason: str
) -> None:
    run = two_steps(poison).compile(store).start({"keep": 0})
    with pytest.raises(InvalidState) as caught:
        drive.run(run)
    assert caught.value.path == f"delta of 'b'['x']{tail}"
    assert reason in caught.value.reason
    assert run.status == Status.FAILED
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "b", None)
    assert stored.error is not None
    assert stored.error["node"] == "b"
    assert stored.error["type"] == "InvalidState"
    failed = run.events[-1]
    assert (failed.type, failed.node) == (EventType.FAILED, "b")
    assert "delta of 'b'['x']" in failed.payload["error"]["message"]
    # a's checkpoint is intact; nothing of b's was written
    assert [cp.step for cp in run.history()] == [0, 1]
    assert run.history()[-1].state == {"keep": 0, "kept": 1}
    assert run.state == {"keep": 0, "kept": 1}
    dumps([e.payload for e in run.events])  # every event stored is storable


@pytest.mark.parametrize("sign", [1, -1])
def test_an_int_of_4300_digits_is_kept_and_one_of_4301_fails_the_run(
    store: Checkpointer, sign: int
) -> None:
    longest, too_long = sign * (10**4300 - 1), sign * 10**4300
    kept = two_steps(longest).compile(store).start({}).run()
    assert kept.status == Status.COMPLETED
    assert kept.state["x"] == longest
    assert store.checkpoint(kept.run_id).state["x"] == longest
    failed = two_steps(too_long).compile(store).start({})
    with pytest.raises(InvalidState, match="4,301 digits"):
        failed.run()
    assert store.get_run(failed.run_id).status == Status.FAILED


@pytest.mark.parametrize(
    ("merge", "path"),
    [
        (lambda old, new: old * new, "state['n']"),
        (lambda old, new: new if old == 1 else {"deep": [0, "\udc80"]}, "state['n']['deep'][1]"),
    ],
    ids=["int too long", "surrogate"],
)
def test_a_reducer_merging_into_a_poison_value_fails_the_run_at_the_node(
    store: Checkpointer, merge: Any, path: str
) -> None:
    g = StateGraph("grow", reducers={"n": merge})
    g.add_node("a", lambda s: {"n": 10**3000}).add_node("b", lambda s: {"n": 10**3000})
    run = g.set_entry_point("a").add_edge("a", "b").compile(store).start({"n": 1})
    with pytest.raises(InvalidState) as caught:
        run.run()
    assert caught.value.path == path
    assert "the reducer of 'n'" in caught.value.reason
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "b", None)
    assert [cp.step for cp in run.history()] == [0, 1]


@pytest.mark.parametrize(("name", "poison", "tail", "reason"), POISON[:4], ids=IDS[:4])
def test_a_poison_value_from_one_parallel_task_fails_the_superstep_and_saves_no_write(
    store: Checkpointer, name: str, poison: Any, tail: str, reason: str
) -> None:
    calls: Counter[str] = Counter()
    fine_ran = threading.Event()

    def fine(state: dict[str, Any]) -> dict[str, Any]:
        calls["fine"] += 1
        fine_ran.set()
        return {"fine": 1}

    def bad(state: dict[str, Any]) -> dict[str, Any]:
        calls["bad"] += 1
        # A failed superstep cancels the tasks that have not started yet; wait for the
        # sibling, so that what is checked is that its write is not saved, not the race.
        fine_ran.wait(10)
        return {"x": poison}

    g = StateGraph("fan").add_node("a", lambda s: {"started": True})
    g.add_node("fine", fine).add_node("bad", bad).add_node("join", lambda s: {"done": 1})
    g.set_entry_point("a").add_edge("a", "fine").add_edge("a", "bad")
    g.add_edge(["fine", "bad"], "join")
    run = g.compile(store).start({})
    with pytest.raises(InvalidState) as caught:
        run.run()
    assert caught.value.path == "delta of 'bad'['x']"
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "bad", None)
    assert run.events[-1].type == EventType.FAILED
    assert run.events[-1].node == "bad"
    assert [cp.step for cp in run.history()] == [0, 1]
    assert run.state == {"started": True}
    assert calls == {"fine": 1, "bad": 1}
    assert all(w.task_id != "bad" for w in store.pending_writes(run.run_id, 1))


@pytest.mark.parametrize(("name", "poison", "tail", "reason"), POISON[:4], ids=IDS[:4])
def test_a_poison_value_inside_a_subgraph_fails_the_child_and_the_parent(
    store: Checkpointer, name: str, poison: Any, tail: str, reason: str
) -> None:
    inner = StateGraph("inner").add_node("dig", lambda s: {"found": poison})
    inner.set_entry_point("dig")
    g = StateGraph("outer").add_node("plan", lambda s: {"planned": 1})
    g.add_node("research", inner).add_node("write", lambda s: {"written": 1})
    g.set_entry_point("plan").add_edge("plan", "research").add_edge("research", "write")
    run = g.compile(store).start({})
    with pytest.raises(NodeFailed) as caught:
        run.run()
    assert caught.value.node == "research"
    assert isinstance(caught.value.error, InvalidState)
    assert caught.value.error.path == "delta of 'dig'['found']"
    [child] = run.children()
    assert (child.status, store.get_run(child.run_id).node) == (Status.FAILED, "dig")
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "research", None)
    assert run.state == {"planned": 1}


@pytest.mark.parametrize(("name", "poison", "tail", "reason"), POISON, ids=IDS)
def test_a_poison_input_creates_no_run(
    store: Checkpointer, name: str, poison: Any, tail: str, reason: str
) -> None:
    wf = two_steps(1).compile(store)
    with pytest.raises(InvalidState) as caught:
        wf.start({"x": poison})
    assert caught.value.path == f"state['x']{tail}"
    with pytest.raises(InvalidState):
        wf.submit({"x": poison})
    assert store.list_runs() == []


def paused(store: Checkpointer) -> Any:
    g = StateGraph("gate").add_node("plan", lambda s: {"amount": 900})
    g.add_node("pay", lambda s: {"paid": s["amount"]})
    g.set_entry_point("plan").add_edge("plan", "pay").add_interrupt_before("pay")
    run = g.compile(store).start({})
    run.run()
    assert run.status == Status.PENDING
    return run


@pytest.mark.parametrize(("name", "poison", "tail", "reason"), POISON, ids=IDS)
def test_an_approval_edit_with_a_poison_value_is_refused_and_nothing_is_decided(
    store: Checkpointer, name: str, poison: Any, tail: str, reason: str
) -> None:
    run = paused(store)
    before = (len(run.events), [cp.step for cp in run.history()], run.decisions())
    with pytest.raises(InvalidDecision, match=r"update\['amount'\]") as caught:
        run.approve(by="ada", update={"amount": poison})
    assert isinstance(caught.value.__cause__, InvalidState)
    assert caught.value.__cause__.path == f"update['amount']{tail}"
    assert run.status == Status.PENDING
    assert (len(run.events), [cp.step for cp in run.history()], run.decisions()) == before
    with pytest.raises(InvalidState):
        run.fork(1, update={"amount": poison})
    assert [r.run_id for r in store.list_runs()] == [run.run_id]
    run.approve(by="ada", update={"amount": 300})  # still pending: decided as usual
    run.run()
    assert run.state["paid"] == 300


@pytest.mark.parametrize(("name", "poison", "tail", "reason"), POISON, ids=IDS)
def test_an_answer_with_a_poison_value_is_refused_and_nothing_is_decided(
    store: Checkpointer, name: str, poison: Any, tail: str, reason: str
) -> None:
    def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"answer": ctx.interrupt("anything?")}

    run = StateGraph("ask").add_node("ask", ask).set_entry_point("ask").compile(store).start({})
    run.run()
    assert run.status == Status.PENDING
    before = (len(run.events), run.decisions())
    with pytest.raises(InvalidAnswer) as caught:
        run.respond(poison, by="ada")
    [(where, message)] = caught.value.problems
    assert where == "$.answer"
    assert f"answer{tail}" in message
    assert reason in message
    assert run.status == Status.PENDING
    assert (len(run.events), run.decisions()) == before
    run.respond("fine", by="ada")
    run.run()
    assert run.state == {"answer": "fine"}


def test_a_node_failing_with_a_lone_surrogate_in_its_message_is_recorded_failed(
    store: Checkpointer,
) -> None:
    def broken(state: dict[str, Any]) -> None:
        raise ValueError(b"caf\xe9".decode("utf-8", "surrogateescape"))

    run = StateGraph("b").add_node("a", broken).set_entry_point("a").compile(store).start({})
    with pytest.raises(NodeFailed):
        run.run()
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.lease_owner) == (Status.FAILED, None)
    assert run.events[-1].payload["error"] == {"type": "ValueError", "message": "caf\\udce9"}


# -- workers: a run that cannot commit is failed, never driven without end -------------

RUNAWAY = 30
"""Executions after which a test's node stops its worker: a worker spinning on a run
(as one did before) ends the test with a count far above what it asserts, not a hang."""


def gated(store: Checkpointer, calls: Counter[str], worker: list[Worker]) -> Workflow:
    """a -> b, b returning an int too long to store when the run's state says ``bad``."""

    def b(state: dict[str, Any]) -> dict[str, Any]:
        calls[state["name"]] += 1
        if calls[state["name"]] >= RUNAWAY:
            worker[0].stop()
        return {"x": 10**5000 if state["bad"] else 1}

    g = StateGraph("gated").add_node("a", lambda s: {"kept": 1}).add_node("b", b)
    return g.set_entry_point("a").add_edge("a", "b").compile(store)


def test_a_worker_fails_a_run_whose_node_returns_a_poison_value_once_and_goes_on(
    store: Checkpointer,
) -> None:
    calls: Counter[str] = Counter()
    holder: list[Worker] = []
    wf = gated(store, calls, holder)
    bad = wf.submit({"name": "bad", "bad": True})
    good = wf.submit({"name": "good", "bad": False})
    holder.append(Worker(wf, poll_max=0.05))
    stats = holder[0].run(until_idle=True)
    assert calls == {"bad": 1, "good": 1}
    assert (stats.failed, stats.completed) == (1, 1)
    stored = store.get_run(bad.run_id)
    assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "b", None)
    assert stored.error is not None
    assert "delta of 'b'['x']" in stored.error["message"]
    assert store.get_run(good.run_id).status == Status.COMPLETED
    assert [cp.step for cp in bad.history()] == [0, 1]


def refusing_commits(
    store: Checkpointer,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    times: int,
    node: str = "b",
) -> Counter[str]:
    """The store's commits of ``node``'s step raise ``error`` (the first ``times``)."""
    real = store.commit
    refused: Counter[str] = Counter()

    def commit(run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        ran = any(e.type == EventType.STATE_UPDATE and e.node == node for e in change.events)
        if ran and refused[run_id] < times:
            refused[run_id] += 1
            raise error
        real(run_id, fence, change, lease_seconds=lease_seconds)

    monkeypatch.setattr(store, "commit", commit)
    return refused


@pytest.mark.parametrize(
    "error",
    [ValueError("a value this store cannot write"), StoreError("disk I/O error")],
    ids=["raw", "store error"],
)
def test_a_worker_retries_a_step_that_will_not_commit_a_bounded_number_of_times_then_fails_it(
    store: Checkpointer, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    calls: Counter[str] = Counter()
    holder: list[Worker] = []
    wf = gated(store, calls, holder)
    run = wf.submit({"name": "stuck", "bad": False})
    other = wf.submit({"name": "other", "bad": False})
    refused = refusing_commits(store, monkeypatch, error, times=10**6)
    holder.append(Worker(wf, poll_max=0.05))
    stats = holder[0].run(until_idle=True)
    assert calls == {"stuck": ATTEMPTS, "other": ATTEMPTS}  # each run's node: bounded
    assert refused == {run.run_id: ATTEMPTS, other.run_id: ATTEMPTS}
    assert stats.failed == 2
    stored = store.get_run(run.run_id)
    assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "b", None)
    assert stored.error is not None
    assert stored.error["type"] == "StepNotCommitted"
    assert str(error) in stored.error["message"]
    failed = run.events[-1]
    assert (failed.type, failed.node) == (EventType.FAILED, "b")
    assert failed.payload["error"]["type"] == "StepNotCommitted"
    assert [cp.step for cp in run.history()] == [0, 1]
    assert run.state == {"name": "stuck", "bad": False, "kept": 1}


def test_a_step_that_commits_on_a_later_attempt_completes_its_run(
    store: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    holder: list[Worker] = []
    run = gated(store, calls, holder).submit({"name": "flaky", "bad": False})
    refusing_commits(store, monkeypatch, StoreError("database is locked"), times=ATTEMPTS - 1)
    holder.append(Worker(run.workflow, poll_max=0.05))
    stats = holder[0].run(until_idle=True)
    assert calls == {"flaky": ATTEMPTS}
    assert (stats.completed, stats.failed) == (1, 0)
    # kept and driven again by its worker, after a wait: never queued for a claim at once
    assert (stats.claimed, stats.requeued) == (1, 0)
    assert store.get_run(run.run_id).status == Status.COMPLETED
    assert run.state["x"] == 1


def test_an_unreachable_store_never_fails_a_run_the_worker_waits_for_it(
    store: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    holder: list[Worker] = []
    run = gated(store, calls, holder).submit({"name": "waits", "bad": False})
    down = StoreUnavailable("db", "the server closed the connection", "start it")
    refusing_commits(store, monkeypatch, down, times=ATTEMPTS + 2)
    holder.append(Worker(run.workflow, poll_max=0.05))
    stats = holder[0].run(until_idle=True)
    assert calls == {"waits": ATTEMPTS + 3}
    assert (stats.completed, stats.failed) == (1, 0)
    assert (stats.claimed, stats.requeued) == (1, 0)
    assert store.get_run(run.run_id).status == Status.COMPLETED


def test_a_queued_or_approved_run_whose_first_step_will_not_commit_is_failed_too(
    store: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: Counter[str] = Counter()
    holder: list[Worker] = []

    def pay(state: dict[str, Any]) -> dict[str, Any]:
        calls[state["name"]] += 1
        if calls[state["name"]] >= RUNAWAY:
            holder[0].stop()
        return {"paid": True}

    g = StateGraph("pay").add_node("pay", pay).set_entry_point("pay")
    wf = g.add_interrupt_before("pay").compile(store)
    approved = wf.start({"name": "approved"})
    approved.run()
    approved.approve(by="ada")
    queued = StateGraph("first").add_node("pay", pay).set_entry_point("pay").compile(store)
    waiting = queued.submit({"name": "queued"})
    refusing_commits(store, monkeypatch, ValueError("cannot write"), times=10**6, node="pay")
    holder.append(Worker(wf, queued, poll_max=0.05))
    stats = holder[0].run(until_idle=True)
    assert calls == {"approved": ATTEMPTS, "queued": ATTEMPTS}
    assert stats.failed == 2
    for run in (approved, waiting):
        stored = store.get_run(run.run_id)
        assert (stored.status, stored.node, stored.lease_owner) == (Status.FAILED, "pay", None)


def test_a_worker_keeps_the_lease_of_a_run_whose_first_step_did_not_commit(
    store: Checkpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run is still queued (its first step never committed): given back between two
    # drives, any claim (another worker's, this worker's own loop's) takes it and runs
    # its node once more.
    calls: Counter[str] = Counter()

    def pay(state: dict[str, Any]) -> dict[str, Any]:
        calls[state["name"]] += 1
        return {"paid": True}

    wf = StateGraph("first").add_node("pay", pay).set_entry_point("pay").compile(store)
    run = wf.submit({"name": "queued"})
    refusing_commits(store, monkeypatch, ValueError("cannot write"), times=10**6, node="pay")
    taken: list[str] = []
    real = store.acquire

    def acquire(run_id: str, owner: str, *, lease_seconds: float) -> Any:
        # Between a drive that did not commit and the next: what another worker can claim.
        taken.extend(r.run_id for r in store.claim("intruder", {wf.name: wf.shape}))
        return real(run_id, owner, lease_seconds=lease_seconds)

    monkeypatch.setattr(store, "acquire", acquire)
    stats = Worker(wf, poll_max=0.05).run(until_idle=True)
    assert taken == []
    assert calls == {"queued": ATTEMPTS}
    assert stats.failed == 1
    assert store.get_run(run.run_id).status == Status.FAILED
