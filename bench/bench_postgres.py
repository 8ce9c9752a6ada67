"""PostgreSQL benchmark: a durable step beside a raw psycopg floor, and beside SQLite.

Run with ``make bench`` (or ``python bench/bench_postgres.py``). It starts a throwaway
server the way the tests do (agentnb.testing.ThrowawayPostgres: initdb in a temporary directory,
127.0.0.1 on a free port, removed at the end) with the server's default durability
(``fsync=on``, ``synchronous_commit=on``). Every figure is measured in this run:

* µs per step of a 200-node chain with ``PostgresCheckpointer``, each step one durable
  transaction (checkpoint, events and lease check);
* the floor: plain psycopg on the same server and the same connection settings, one
  ``INSERT`` + ``COMMIT`` per step of a similar row;
* the same two with ``synchronous_commit=off`` (steps not waiting for the WAL flush);
* µs per step with ``SqliteCheckpointer`` (``synchronous=NORMAL``) and its floor, for the
  per-step cost of choosing PostgreSQL;
* µs per step in memory (the runtime's own cost, which every backend pays on top of its
  writes), and so the store's own share of a step against the floor;
* ms per decision (``decide`` on a pending run) and the approvals one connection sustains;
* round trips to the server per step, counted from libpq's protocol trace (the floor: 3,
  ``BEGIN``, ``INSERT``, ``COMMIT``).

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
from psycopg import pq  # noqa: E402

from agentnb import (  # noqa: E402
    MemoryCheckpointer,
    PostgresCheckpointer,
    SqliteCheckpointer,
    StateGraph,
    Workflow,
)
from agentnb.examples import build_refund_workflow  # noqa: E402
from agentnb.testing import ThrowawayPostgres  # noqa: E402

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


def round_trips(dsn: str) -> float:
    """Messages that wait for the server's answer (``Query``, ``Sync``) per step of a run."""
    store = PostgresCheckpointer(dsn)
    wf = chain(store)
    wf.start({"count": 0, "messages": []}).run()  # warm-up: statements prepared
    run = wf.start({"count": 0, "messages": []})
    with tempfile.TemporaryFile("w+") as trace:
        conn = store._session.conn
        conn.pgconn.trace(trace.fileno())
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        run.run()
        conn.pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t")[2] for line in trace if line.startswith("F\t")]
    store.close()
    return sum(1 for kind in sent if kind.startswith(("Query", "Sync"))) / NODES


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


def schema(cluster: ThrowawayPostgres, name: str) -> str:
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return cluster.dsn(options=f"-csearch_path%3D{name}")


def paired(store: Callable[[], float], floor: Callable[[], float]) -> tuple[float, float, float]:
    """Median store and floor figures and the median of their ratios, the two measured
    alternately so that both see the same load on a shared machine."""
    store(), floor()  # warm-up
    pairs = [(store(), floor()) for _ in range(REPEATS)]
    return (
        statistics.median(a for a, _ in pairs),
        statistics.median(b for _, b in pairs),
        statistics.median(a / b for a, b in pairs),
    )


def main() -> None:
    cluster = ThrowawayPostgres()
    rows: dict[str, tuple[float, float, float]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for level in ("on", "off"):
                dsn = schema(cluster, f"bench_{level}")
                opened = PostgresCheckpointer(dsn, synchronous_commit=level)
                rows[f"postgres, synchronous_commit={level}"] = paired(
                    store_step(lambda opened=opened: opened), pg_floor(dsn, level)
                )
            rows["sqlite, synchronous=NORMAL"] = paired(
                store_step(lambda: SqliteCheckpointer(folder / "runs.sqlite3")),
                sqlite_floor(folder),
            )
            runtime = median_of(store_step(MemoryCheckpointer))
            decide_ms = median_of(decision(schema(cluster, "bench_decide")))
            trips = round_trips(schema(cluster, "bench_trips"))
    finally:
        cluster.remove()

    print(f"PostgreSQL {cluster.bindir.parent.name}, {NODES}-node chain, median of {REPEATS} pairs")
    print(f"  {'':<34} {'store':>10} {'floor':>10} {'store/floor':>12}")
    for name, (store, floor, ratio) in rows.items():
        goal = (
            ""
            if name.startswith("sqlite")
            else ("  ok" if ratio <= 1.5 else "  over the 1.5x goal")
        )
        print(f"  {name:<34} {store:8.1f}µs {floor:8.1f}µs {ratio:11.2f}x{goal}")
    print(f"  the runtime alone (MemoryCheckpointer)  {runtime:8.1f}µs")
    for level in ("on", "off"):
        store, floor, _ = rows[f"postgres, synchronous_commit={level}"]
        print(
            f"  the store's own share, synchronous_commit={level}: "
            f"{(store - runtime) / floor:.2f}x the floor"
        )
    durable = rows["postgres, synchronous_commit=on"][0]
    vs = durable / rows["sqlite, synchronous=NORMAL"][0]
    print(f"  a durable PostgreSQL step costs {vs:.1f}x a SQLite step")
    print(
        f"  decide on PostgreSQL: {decide_ms:.2f} ms ({1000 / decide_ms:.0f} decisions/s per connection)"
    )
    print(f"  one connection sustains ~{1e6 / durable:.0f} durable steps/s")
    print(f"  round trips per step: {trips:.2f} (the floor: 3, BEGIN, INSERT, COMMIT)")


if __name__ == "__main__":
    main()
