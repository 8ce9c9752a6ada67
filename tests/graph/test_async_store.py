"""The driver and the Worker await the store: a slow store never blocks their event loop.

The contract suite itself runs through the awaitable twins too (``ASYNC_FACE`` in
tests/store/test_contract*.py, the adapter in tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentnb import (
    Checkpointer,
    MemoryCheckpointer,
    SqliteCheckpointer,
    StateGraph,
    Status,
    Worker,
)
from agentnb._aio import alone
from agentnb.store.base import StepCommit
from tests.conftest import TWINS

RUNS = 200
BLOCKING = 0.05  # seconds each commit holds its thread, as a busy file or a network would
TICK_WAIT = 10.0  # seconds a commit off the loop waits for the loop's next tick


class SlowCommits:
    """A store whose every step write blocks its caller for 50 ms, and says what the
    event loop did meanwhile: the ticks a heartbeat on that loop counted during each
    commit, and how many commits were in flight at once. Mixed into a backend."""

    blocking = True

    def gauge(self) -> SlowCommits:
        self.ticks = 0  # bumped by the heartbeat, on the loop
        self.seen: list[int] = []  # per commit: ticks counted while it blocked
        self.writing = 0
        self.overlap = 0
        self.threads: set[int] = set()
        self._gauge = threading.Lock()
        return self

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        with self._gauge:
            self.writing += 1
            self.overlap = max(self.overlap, self.writing)
            self.threads.add(threading.get_ident())
        before = self.ticks
        time.sleep(BLOCKING)  # the store's own cost, not a wait for a condition
        if threading.get_ident() != threading.main_thread().ident:
            # Off the loop's thread the loop goes on ticking, if only once the machine
            # schedules it: wait for that tick (on the loop's thread none could come).
            deadline = time.monotonic() + TICK_WAIT
            while self.ticks == before and time.monotonic() < deadline:
                time.sleep(0.001)
        self.seen.append(self.ticks - before)
        with self._gauge:
            self.writing -= 1
        super().commit(run_id, fence, change, lease_seconds=lease_seconds)  # type: ignore[misc]


class SlowMemory(SlowCommits, MemoryCheckpointer):
    pass


class SlowSqlite(SlowCommits, SqliteCheckpointer):
    pass


def slow_store(kind: str, tmp_path: Path) -> Any:
    if kind == "memory":
        return SlowMemory().gauge()
    return SlowSqlite(tmp_path / "runs.sqlite3").gauge()


def slow_flow(store: Any, inflight: dict[str, int]) -> Any:
    async def call(state: dict[str, Any]) -> dict[str, Any]:
        inflight["now"] += 1
        inflight["peak"] = max(inflight["peak"], inflight["now"])
        await asyncio.sleep(BLOCKING)  # an API call
        inflight["now"] -= 1
        return {"done": True}

    g = StateGraph("slow")
    g.add_node("call", call)
    g.set_entry_point("call")
    return g.compile(store)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_slow_store_does_not_block_the_loop_of_a_worker_driving_200_runs(
    kind: str, tmp_path: Path
) -> None:
    store = slow_store(kind, tmp_path)
    inflight = {"now": 0, "peak": 0}
    wf = slow_flow(store, inflight)
    runs = [wf.submit({}) for _ in range(RUNS)]
    worker = Worker(wf, concurrency=RUNS)

    async def main() -> None:
        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(0.001)
                store.ticks += 1

        beating = asyncio.ensure_future(heartbeat())
        try:
            await worker.arun(until_idle=True)
        finally:
            beating.cancel()

    try:
        asyncio.run(main())
        statuses = [store.get_run(r.run_id).status for r in runs]
    finally:
        store.close()
    assert statuses == [Status.COMPLETED] * RUNS
    assert len(store.seen) == RUNS
    # Commits blocked threads of their own, never the loop: the heartbeat on the loop kept
    # ticking while each did (on the loop, no commit could see a tick), and commits
    # overlapped (on the loop they would queue).
    assert all(n > 0 for n in store.seen), sorted(store.seen)[:10]
    assert store.overlap > 1
    assert threading.main_thread().ident not in store.threads
    assert inflight["peak"] > RUNS // 2  # the nodes' awaits overlapped too


def test_a_blocking_store_answers_its_twins_from_a_worker_thread(tmp_path: Any) -> None:
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        seen: list[int] = []

        def where() -> int:
            seen.append(threading.get_ident())
            return len(store.list_runs())

        async def main() -> int:
            return await store.offload(where)

        assert asyncio.run(main()) == 0
        assert seen != [threading.get_ident()]
        assert asyncio.run(store.aclaim("me", {"g": "s"})) == []


def test_the_memory_store_and_a_one_run_sync_call_answer_on_the_loop(tmp_path: Any) -> None:
    seen: list[int] = []

    def where() -> int:
        seen.append(threading.get_ident())
        return 1

    async def main(store: Any, *, sole: bool) -> int:
        return int(await (alone(store.offload(where)) if sole else store.offload(where)))

    asyncio.run(main(MemoryCheckpointer(), sole=False))
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        asyncio.run(main(store, sole=True))  # run.run() blocks its caller anyway
    assert seen == [threading.get_ident()] * 2


class WhereCommits(SqliteCheckpointer):
    """SQLite, noting the thread of each step write."""

    threads: list[int]

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        self.threads.append(threading.get_ident())
        super().commit(run_id, fence, change, lease_seconds=lease_seconds)


def test_run_run_writes_its_steps_inline_and_an_awaited_run_off_the_loop(tmp_path: Any) -> None:
    with WhereCommits(tmp_path / "runs.sqlite3") as store:
        store.threads = []
        g = StateGraph("two")
        g.add_node("a", lambda s: {"n": 1})
        g.add_node("b", lambda s: {"n": 2})
        g.set_entry_point("a")
        g.add_edge("a", "b")
        wf = g.compile(store)
        main = threading.get_ident()

        wf.start({}).run()  # a sync call: its caller waits, the loop has nothing else
        assert store.threads == [main, main]
        for _ in wf.start({}).stream():
            pass
        assert store.threads[2:] == [main, main]

        store.threads = []
        asyncio.run(wf.start({}).arun())  # awaited: other tasks may share this loop
        assert len(store.threads) == 2
        assert main not in store.threads


class OwnAcommit(MemoryCheckpointer):
    """A store with an async step write of its own (as a truly async backend would)."""

    awaited: list[int]

    async def acommit(
        self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float
    ) -> None:
        self.awaited.append(change.step)
        await asyncio.sleep(0)  # a real await: the driver must not skip this twin
        self.commit(run_id, fence, change, lease_seconds=lease_seconds)


def test_a_stores_own_acommit_is_awaited_for_every_step() -> None:
    store = OwnAcommit()
    store.awaited = []
    g = StateGraph("two")
    g.add_node("a", lambda s: {"n": 1})
    g.add_node("b", lambda s: {"n": 2})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    run = g.compile(store).start({})
    run.run()  # a sync call, on a store that never blocks: the stock twin would be skipped
    assert run.status == Status.COMPLETED
    assert store.awaited == [1, 2]


def test_every_awaitable_twin_takes_what_its_sync_method_takes() -> None:
    assert set(TWINS) >= {"acquire", "commit", "release", "checkpoint", "claim", "renew"}
    for name in TWINS:
        sync, twin = getattr(Checkpointer, name), getattr(Checkpointer, "a" + name)
        assert inspect.signature(twin).parameters == inspect.signature(sync).parameters, name


class WhereEffects(SqliteCheckpointer):
    """SQLite, noting the thread of each ledger read and write."""

    threads: list[int]

    def recorded_effect(self, key: str) -> str | None:
        self.threads.append(threading.get_ident())
        return super().recorded_effect(key)

    def record_effect(self, key: str, **fields: Any) -> str:
        self.threads.append(threading.get_ident())
        return super().record_effect(key, **fields)


def test_an_async_nodes_aonce_reads_and_writes_the_ledger_off_the_loop(tmp_path: Any) -> None:
    with WhereEffects(tmp_path / "runs.sqlite3") as store:
        store.threads = []
        paid: list[int] = []

        async def pay(state: dict[str, Any], ctx: Any) -> dict[str, Any]:
            async def charge() -> int:
                paid.append(1)
                return 42

            return {"receipt": await ctx.aonce("charge", charge)}

        g = StateGraph("pay")
        g.add_node("pay", pay)
        g.set_entry_point("pay")
        run = asyncio.run(g.compile(store).start({}).arun())
        assert (run.state["receipt"], paid) == (42, [1])
        assert len(store.threads) == 2  # one read (not done yet), one write
        assert threading.get_ident() not in store.threads


class HeldAcquire(SqliteCheckpointer):
    """A store whose lease-taking waits, in its worker thread, until the test lets it go."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.entered, self.go = threading.Event(), threading.Event()

    def acquire(self, run_id: str, owner: str, **kwargs: Any) -> Any:
        self.entered.set()
        assert self.go.wait(30), "the test never let the acquire go"
        return super().acquire(run_id, owner, **kwargs)


def test_a_drive_cancelled_while_its_lease_is_being_taken_records_the_run_cancelled(
    tmp_path: Path,
) -> None:
    # Stop pressed (or a cell interrupted) while acquire runs in its thread: the thread
    # takes the lease all the same. The run must not stay 'running' under a lease no one
    # holds any more; it is recorded cancelled, as a drive cancelled later is, and given back.
    store = HeldAcquire(tmp_path / "held.sqlite3")
    g = StateGraph("held").add_node("a", lambda s: {"n": 1}).set_entry_point("a")
    run = g.add_edge("a", "__end__").compile(store).start({})

    async def main() -> None:
        async def drive() -> None:
            async for _ in run.astream():
                pass

        task = asyncio.ensure_future(drive())
        assert await asyncio.to_thread(store.entered.wait, 30)
        task.cancel()
        store.go.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    record = store.get_run(run.run_id)
    assert record.status == Status.CANCELLED
    assert record.lease_owner is None
    assert [e.type for e in store.events(run.run_id)][-1] == "cancelled"
    assert run.run().status == Status.COMPLETED  # and Run continues it
    store.close()
