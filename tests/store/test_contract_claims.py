"""The claim contract (part of the shared checkpointer suite: every backend, ``store`` fixture).

What a worker may take, and that two never take the same run: :mod:`agentnb.store.claims`.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agentnb import Checkpointer, RunBusy, Status
from agentnb.errors import LeaseLost
from agentnb.fsm.chart import State, Statechart
from agentnb.fsm.timers import ManualClock
from agentnb.store.base import CheckpointWrite, StepCommit, new_owner
from agentnb.store.records import Event, RunRecord

GRAPHS = {"g": "s"}


@pytest.fixture(params=["sync", "async"])
def store_face(request: pytest.FixtureRequest) -> str:
    """Every test here again through the awaitable twins (``async_face``, tests/conftest.py)."""
    return str(request.param)


def submitted(
    store: Checkpointer, run_id: str, status: Status = Status.QUEUED, **row: object
) -> None:
    now = time.time()
    fields: dict[str, object] = {
        "run_id": run_id,
        "graph": "g",
        "shape": "s",
        "status": status,
        "node": "a",
        "step": 0,
        "seq": 1,
        "max_steps": 5,
        "created_at": now,
        "updated_at": now,
    }
    fields.update(row)
    started = [Event(run_id, 1, 0, "run_started", "a", {}, now)]
    store.create_run(RunRecord(**fields), CheckpointWrite(0, "a", "{}"), started)  # type: ignore[arg-type]


def step(
    store: Checkpointer, run_id: str, fence: int, status: Status, seq: int = 2, lease: float = 30
) -> None:
    event = Event(run_id, seq, 1, "state_update", "a", {"delta": {}}, time.time())
    change = StepCommit(
        status, "b", 1, [event], CheckpointWrite(1, "b", "{}"), release=status != Status.RUNNING
    )
    store.commit(run_id, fence, change, lease_seconds=lease)


def test_a_queued_run_is_claimed_once_with_a_lease_and_a_new_fence(store: Checkpointer) -> None:
    submitted(store, "r1")
    first, second = new_owner(), new_owner()
    [claimed] = store.claim(first, GRAPHS, limit=5, lease_seconds=30)
    assert (claimed.run_id, claimed.status, claimed.lease_owner) == ("r1", Status.QUEUED, first)
    assert claimed.fence == 1
    assert (claimed.lease_expires or 0) > time.time() + 20
    assert store.claim(second, GRAPHS, limit=5) == []
    assert store.get_run("r1").lease_owner == first


def test_claims_take_at_most_limit_runs_oldest_first(store: Checkpointer) -> None:
    for i in range(5):
        submitted(store, f"r{i}")
        time.sleep(0.002)  # distinct creation times: the order under test
    owner = new_owner()
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=2)] == ["r0", "r1"]
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=10)] == ["r2", "r3", "r4"]


def test_a_claim_serves_waiting_runs_and_expired_leases_together_oldest_first(
    store: Checkpointer,
) -> None:
    for run_id in ("old", "abandoned", "new"):
        submitted(store, run_id)
        time.sleep(0.002)  # distinct status times: the order under test
    gone = "elsewhere:1:dead"  # another host: only expiry frees its runs
    [held] = store.claim(gone, GRAPHS, lease_seconds=0.05, run_ids=["abandoned"])
    expires = held.lease_expires or 0.0
    while time.time() <= expires:  # the clock is the condition; 0.05 s from the claim
        time.sleep(max(0.0, expires - time.time()) + 0.001)
    owner = new_owner()
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=2)] == ["old", "abandoned"]
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=5)] == ["new"]


def test_a_claim_takes_only_runs_of_the_named_workflows_and_shapes(store: Checkpointer) -> None:
    submitted(store, "other-graph", graph="h")
    submitted(store, "other-shape", shape="s2")
    submitted(store, "mine")
    owner = new_owner()
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=10)] == ["mine"]
    assert store.claim(owner, {}, limit=10) == []
    assert [r.run_id for r in store.claim(owner, {"h": "s"}, limit=10)] == ["other-graph"]


def test_a_claim_can_be_restricted_to_named_runs(store: Checkpointer) -> None:
    submitted(store, "r1")
    submitted(store, "r2")
    owner = new_owner()
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=10, run_ids=["r2"])] == ["r2"]
    assert store.claim(owner, GRAPHS, limit=10, run_ids=[]) == []
    assert [r.run_id for r in store.claim(owner, GRAPHS, limit=10)] == ["r1"]


def test_an_approved_run_is_claimable_and_a_pending_or_finished_one_is_not(
    store: Checkpointer,
) -> None:
    for run_id, status in (
        ("pending", Status.PENDING),
        ("approved", Status.APPROVED),
        ("completed", Status.COMPLETED),
        ("failed", Status.FAILED),
        ("rejected", Status.REJECTED),
        ("cancelled", Status.CANCELLED),
    ):
        submitted(store, run_id, status)
    assert [r.run_id for r in store.claim(new_owner(), GRAPHS, limit=10)] == ["approved"]


def test_a_run_someone_steps_by_hand_is_never_claimed(store: Checkpointer) -> None:
    # workflow.start() makes a running run nobody holds; run.step() releases between steps.
    submitted(store, "by-hand", Status.RUNNING)
    owner = new_owner()
    assert store.claim(owner, GRAPHS, limit=10) == []
    fence = store.acquire("by-hand", owner).fence
    step(store, "by-hand", fence, Status.RUNNING)
    store.release("by-hand", fence)
    assert store.claim(new_owner(), GRAPHS, limit=10) == []


def test_a_run_whose_lease_expired_is_claimed_and_its_old_worker_fenced_out(
    store: Checkpointer,
) -> None:
    submitted(store, "r1")
    dead = "elsewhere:1:dead"  # another host: only expiry frees it
    [mine] = store.claim(dead, GRAPHS)
    step(store, "r1", store.acquire("r1", dead).fence, Status.RUNNING)  # mid-run
    assert store.claim(new_owner(), GRAPHS) == []  # still leased (for 30 s)
    fence = store.acquire("r1", dead, lease_seconds=0.05).fence  # then the worker vanishes
    deadline = time.monotonic() + 5
    taken: list[RunRecord] = []
    while not taken and time.monotonic() < deadline:
        taken = store.claim("heir", GRAPHS)
    assert [r.run_id for r in taken] == ["r1"]
    assert taken[0].status == Status.RUNNING
    assert taken[0].fence > fence > mine.fence - 1
    with pytest.raises(LeaseLost):
        step(store, "r1", fence, Status.RUNNING, seq=3)
    with pytest.raises(RunBusy):
        store.acquire("r1", new_owner())
    assert store.acquire("r1", "heir").fence == taken[0].fence + 1


def test_requeue_puts_a_released_run_back_for_any_worker(store: Checkpointer) -> None:
    submitted(store, "r1")
    owner = new_owner()
    [claimed] = store.claim(owner, GRAPHS)
    fence = store.acquire("r1", owner).fence
    step(store, "r1", fence, Status.RUNNING)
    assert store.requeue("r1", fence) is False  # still held: not given back yet
    store.release("r1", fence)
    assert store.requeue("r1", fence - 1) is False  # an older fence changes nothing
    assert store.requeue("r1", fence) is True
    run = store.get_run("r1")
    assert (run.status, run.step, run.lease_owner) == (Status.QUEUED, 1, None)
    assert [r.run_id for r in store.claim(new_owner(), GRAPHS)] == ["r1"]
    assert claimed.fence < fence


def test_concurrent_claimers_never_share_a_run(store: Checkpointer) -> None:
    for i in range(60):
        submitted(store, f"r{i:02}")
    got: list[list[str]] = []
    lock = threading.Lock()

    def claimer() -> None:
        owner = new_owner()
        mine: list[str] = []
        while batch := store.claim(owner, GRAPHS, limit=3):
            mine += [r.run_id for r in batch]
        with lock:
            got.append(mine)

    threads = [threading.Thread(target=claimer) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [run_id for mine in got for run_id in mine]
    assert sorted(every) == [f"r{i:02}" for i in range(60)]


def test_await_work_returns_within_its_timeout(store: Checkpointer) -> None:
    async def wait() -> None:
        await asyncio.wait_for(store.await_work(new_owner(), 0.01), timeout=5)

    asyncio.run(wait())


def light() -> Statechart:
    return Statechart(
        "light",
        [State("on", after={5: "off"}, on={"toggle": "off"}), State("off", on={"toggle": "on"})],
    )


def test_an_instance_with_a_due_timer_is_leased_to_one_worker_until_released(
    store: Checkpointer,
) -> None:
    light().start("lamp", store=store, clock=ManualClock(0))  # its timer is due at 5.0
    first, second = new_owner(), new_owner()
    assert store.claim_timers(first, ["light"], now=4.0) == []  # not due yet
    assert store.claim_timers(first, ["dark"]) == []  # another machine's instances only
    [claim] = store.claim_timers(first, ["light"], lease_seconds=30)
    assert (claim.instance_id, claim.machine, claim.fire_at, claim.owner) == (
        "lamp",
        "light",
        5.0,
        first,
    )
    assert store.claim_timers(second, ["light"]) == []
    store.release_timers("lamp", second)  # not its lease: nothing changes
    assert store.claim_timers(second, ["light"]) == []
    store.release_timers("lamp", first)
    assert [c.owner for c in store.claim_timers(second, ["light"])] == [second]


def test_a_timer_lease_that_expired_is_claimed_by_another_worker(store: Checkpointer) -> None:
    for name in ("a", "b"):
        light().start(name, store=store, clock=ManualClock(0))
    assert len(store.claim_timers("gone", ["light"], limit=5, lease_seconds=0.05)) == 2
    deadline = time.monotonic() + 5
    taken: list[str] = []
    while len(taken) < 2 and time.monotonic() < deadline:
        taken += [c.instance_id for c in store.claim_timers("heir", ["light"], limit=5)]
    assert sorted(taken) == ["a", "b"]


def test_renew_extends_only_the_owners_leases(store: Checkpointer) -> None:
    submitted(store, "mine")
    submitted(store, "theirs")
    [claimed] = store.claim("me", GRAPHS, run_ids=["mine"], lease_seconds=1)
    store.claim("them", GRAPHS, run_ids=["theirs"], lease_seconds=1)
    assert store.renew("me", ["mine", "theirs", "unknown"], lease_seconds=60) == ["mine"]
    assert (store.get_run("mine").lease_expires or 0) > (claimed.lease_expires or 0) + 30
    assert (store.get_run("theirs").lease_expires or 0) < time.time() + 2
    assert store.renew("me", []) == []
