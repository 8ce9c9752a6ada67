"""The PostgreSQL checkpointer's pool (``connections=N``): concurrent calls each hold a
connection of their own, never more than N are open, and a terminated one is replaced."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentnb import PostgresCheckpointer, StateGraph, Status, StoreError, Worker
from agentnb.store.base import new_owner
from agentnb.store.postgres_locks import run_lock
from agentnb.store.postgres_pool import LISTENER_NAME
from tests.store.test_postgres import _waiting_on_a_lock, new_run, step


@pytest.fixture
def pooled(pg_dsn: str) -> Iterator[PostgresCheckpointer]:
    with PostgresCheckpointer(pg_dsn, connections=3) as store:
        yield store


@pytest.mark.parametrize("connections", [0, -1, 1.5, True, "4"])
def test_a_number_of_connections_that_is_not_a_positive_int_is_refused(
    pg_dsn: str, connections: Any
) -> None:
    with pytest.raises(StoreError, match="is not a number of connections"):
        PostgresCheckpointer(pg_dsn, connections=connections)


def test_a_call_waiting_on_the_server_does_not_hold_up_another_runs_steps(
    pooled: PostgresCheckpointer, pg_dsn: str
) -> None:
    new_run(pooled, "held")
    new_run(pooled, "free")
    with psycopg.connect(pg_dsn) as other:  # a transaction holding run "held"'s lock
        other.execute("SELECT pg_advisory_xact_lock_shared(0, 0)")
        other.execute("SELECT pg_advisory_xact_lock(1, %s)", (run_lock("held"),))
        waiting = threading.Thread(target=pooled.acquire, args=("held", new_owner()))
        waiting.start()  # holds one pooled connection while it waits for the lock
        deadline = time.monotonic() + 30
        while not _waiting_on_a_lock(other) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _waiting_on_a_lock(other)
        stepped = threading.Event()

        def steps() -> None:
            fence = pooled.acquire("free", new_owner()).fence
            for n in range(1, 6):
                step(pooled, "free", fence, n)
            stepped.set()

        threading.Thread(target=steps, daemon=True).start()
        # On one connection these steps would queue behind the waiting call.
        assert stepped.wait(timeout=30)
        assert waiting.is_alive()
    waiting.join(timeout=30)
    assert not waiting.is_alive()
    assert pooled.checkpoint("free").state == {"n": 5}
    assert pooled.get_run("held").lease_owner is not None


def test_a_worker_driving_many_runs_uses_at_most_the_pools_connections(pg_dsn: str) -> None:
    open_seen: list[int] = []
    with psycopg.connect(pg_dsn, autocommit=True) as monitor:
        before = _store_backends(monitor)  # other stores' on this server

        async def node(state: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(0.02)  # the node's own work (a model call, a tool)
            open_seen.append(len(_store_backends(monitor) - before))
            return {"n": state["n"] + 1}

        with PostgresCheckpointer(pg_dsn, connections=3) as pooled:
            g = StateGraph("pooled")
            g.add_node("a", node).add_node("b", node).add_node("c", node)
            wf = g.set_entry_point("a").add_edge("a", "b").add_edge("b", "c").compile(pooled)
            runs = [wf.submit({"n": 0}) for _ in range(24)]
            stats = Worker(wf, concurrency=12).run(until_idle=True)
            pool = pooled._connections.stats()
            assert stats.completed == 24
            assert {r.status for r in runs} == {Status.COMPLETED}
            assert {r.state["n"] for r in runs} == {3}
    assert max(open_seen) <= 3  # the pool's bound, whatever the worker's concurrency
    assert pool["pool_max"] == 3
    assert 2 <= pool["pool_size"] <= 3  # concurrent runs asked for more than one


def test_a_stores_listening_connection_is_named_apart_from_the_pools(
    pooled: PostgresCheckpointer,
) -> None:
    # pg_stat_activity tells a worker's LISTEN from the connections that read and write,
    # whether or not it has sent its LISTEN yet (counting by query text raced with that).
    listening = pooled._connections.listening()
    try:
        (name,) = listening.execute("SHOW application_name").fetchone()
    finally:
        listening.close()
    with pooled._using():
        (own,) = pooled._session.raw("SHOW application_name").fetchone()
    assert (name, own) == (LISTENER_NAME, "agentnb")


def _store_backends(monitor: psycopg.Connection[Any]) -> set[int]:
    """The server's connections opened by agentnb stores to read and write (a store's
    listening connection is named apart: it is not the pool's)."""
    rows = monitor.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'agentnb'"
    ).fetchall()
    return {pid for (pid,) in rows}


def test_pooled_connections_terminated_by_the_server_are_replaced(
    pooled: PostgresCheckpointer, pg_dsn: str
) -> None:
    new_run(pooled, "r1")
    fence = pooled.acquire("r1", new_owner()).fence
    step(pooled, "r1", fence, 1)
    with pooled._using():
        (pid,) = pooled._session.raw("SELECT pg_backend_pid()").fetchone()
    with psycopg.connect(pg_dsn, autocommit=True) as admin:  # the connection, back in the pool
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    step(pooled, "r1", fence, 2)  # the plain step on a replaced connection
    pooled.release("r1", fence)
    assert pooled._connections.reconnects >= 1
    assert [c.step for c in pooled.checkpoints("r1")] == [0, 1, 2]
    assert [e.seq for e in pooled.events("r1")] == [1, 2, 3]
    assert pooled.get_run("r1").lease_owner is None
