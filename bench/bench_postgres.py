"""PostgreSQL benchmark: a durable step beside a raw psycopg floor, and beside SQLite.

Run with ``make bench`` (or ``python bench/bench_postgres.py``). It starts a throwaway
cluster the way the tests do (tests/pg_cluster.py: initdb in a temporary directory,
127.0.0.1 on a free port, removed at the end) with the server's default durability
(``fsync=on``, ``synchronous_commit=on``). Every figure is measured in this run:

* µs per step of a 200-node chain with ``PostgresCheckpointer``, each step one durable
  transaction (checkpoint, events and lease check);
* the floor: plain psycopg on the same server and the same connection settings, one
  ``INSERT`` + ``COMMIT`` per step of a similar row;
* the same two with ``synchronous_commit=off`` (steps not waiting for the WAL flush);
* µs per step with ``SqliteCheckpointer`` (``synchronous=NORMAL``) and its floor, for the
  per-step cost of choosing PostgreSQL;
* ms per decision (``decide`` on a pending run) and the approvals one connection sustains.

Goal: ≤ 1.5x the psycopg floor per durable step.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from agentnb import PostgresCheckpointer, SqliteCheckpointer, StateGraph, Workflow  # noqa: E402
from agentnb.examples import build_refund_workflow  # noqa: E402
from tests.pg_cluster import Cluster  # noqa: E402

NODES = 200
REPEATS = 7


def median_of(fn: Callable[[], float], repeats: int = REPEATS) -> float:
    fn()  # warm-up: imports, statement caches, buffers
    return statistics.median(fn() for _ in range(repeats))


def chain(store: object) -> Workflow:
    g = StateGraph("chain")
    for i in range(NODES):
        g.add_node(f"n{i}", lambda state, i=i: {"count": i, "last": f"n{i}"})
    g.set_entry_point("n0")
    for i in range(NODES - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    return g.compile(store, max_steps=NODES + 1)  # type: ignore[arg-type]


def store_step(open_store: Callable[[], object]) -> Callable[[], float]:
    store = open_store()
    wf = chain(store)

    def measure() -> float:
        run = wf.start({"count": 0, "messages": []})
        t = time.perf_counter()
        run.run()
        elapsed = time.perf_counter() - t
        assert run.status == "completed"
        return elapsed / NODES * 1e6

    return measure


def pg_floor(dsn: str, synchronous_commit: str) -> Callable[[], float]:
    """Plain psycopg: one INSERT + COMMIT per step, same server, same commit level."""
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SELECT set_config('synchronous_commit', %s, false)", (synchronous_commit,))
    conn.execute(
        "CREATE TABLE IF NOT EXISTS cp (run text, step int, state text, PRIMARY KEY (run, step))"
    )
    counter = iter(range(10**9))

    def measure() -> float:
        run = f"r{next(counter)}"
        t = time.perf_counter()
        for i in range(NODES):
            state = json.dumps({"count": i, "last": f"n{i}", "messages": []})
            with conn.transaction():
                conn.execute("INSERT INTO cp VALUES (%s, %s, %s)", (run, i, state))
        return (time.perf_counter() - t) / NODES * 1e6

    return measure


def sqlite_floor(folder: Path) -> Callable[[], float]:
    db = sqlite3.connect(str(folder / "floor.sqlite3"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE cp (run TEXT, step INT, state TEXT, PRIMARY KEY (run, step))")
    counter = iter(range(10**9))

    def measure() -> float:
        run = f"r{next(counter)}"
        t = time.perf_counter()
        for i in range(NODES):
            state = json.dumps({"count": i, "last": f"n{i}", "messages": []})
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO cp VALUES (?, ?, ?)", (run, i, state))
            db.execute("COMMIT")
        return (time.perf_counter() - t) / NODES * 1e6

    return measure


def decision(dsn: str) -> Callable[[], float]:
    store = PostgresCheckpointer(dsn)
    wf = build_refund_workflow(store)

    def measure() -> float:
        runs = [wf.start({"requested": 1000}) for _ in range(20)]
        for run in runs:
            run.run()
        t = time.perf_counter()
        for run in runs:
            store.decide(run.run_id, "approved", "bench")
        return (time.perf_counter() - t) / len(runs) * 1e3

    return measure


def schema(cluster: Cluster, name: str) -> str:
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return cluster.dsn(options=f"-csearch_path%3D{name}")


def main() -> None:
    cluster = Cluster.create()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            rows: dict[str, float] = {}
            for level in ("on", "off"):
                dsn = schema(cluster, f"bench_{level}")
                rows[f"postgres step (synchronous_commit={level})"] = median_of(
                    store_step(
                        lambda dsn=dsn, level=level: PostgresCheckpointer(
                            dsn, synchronous_commit=level
                        )
                    )
                )
                rows[f"psycopg floor (synchronous_commit={level})"] = median_of(
                    pg_floor(dsn, level)
                )
            rows["sqlite step (synchronous=NORMAL)"] = median_of(
                store_step(lambda: SqliteCheckpointer(folder / "runs.sqlite3"))
            )
            rows["sqlite3 floor (synchronous=NORMAL)"] = median_of(sqlite_floor(folder))
            decide_ms = median_of(decision(schema(cluster, "bench_decide")))
    finally:
        cluster.remove()

    print(f"PostgreSQL {cluster.bindir.parent.name}, {NODES}-node chain, median of {REPEATS}")
    for name, us in rows.items():
        print(f"  {name:<42} {us:9.1f} µs/step")
    for level in ("on", "off"):
        ratio = (
            rows[f"postgres step (synchronous_commit={level})"]
            / rows[f"psycopg floor (synchronous_commit={level})"]
        )
        verdict = "ok" if ratio <= 1.5 else "OVER the 1.5x goal"
        print(f"  store / floor, synchronous_commit={level}: {ratio:.2f}x ({verdict})")
    vs = rows["postgres step (synchronous_commit=on)"] / rows["sqlite step (synchronous=NORMAL)"]
    print(f"  postgres (durable) / sqlite per step: {vs:.2f}x")
    print(
        f"  decide on PostgreSQL: {decide_ms:.2f} ms ({1000 / decide_ms:.0f} decisions/s per connection)"
    )
    steps = 1e6 / rows["postgres step (synchronous_commit=on)"]
    print(f"  one connection sustains ~{steps:.0f} durable steps/s")


if __name__ == "__main__":
    main()
