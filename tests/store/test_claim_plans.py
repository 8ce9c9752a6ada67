"""How a claim reads the queue: through the partial indexes of migration 0009 (PostgreSQL
0003), in their order, so its cost does not grow with the number of runs queued.

A claim runs under SQLite's write lock, so a claim that sorted the whole queue (what one
condition joined with OR made both planners do) held every other worker's step off for as
long as the sort took: ~2 ms per claim with 2,000 runs queued. These tests read the plans.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentnb import SqliteCheckpointer, StateGraph, Workflow
from agentnb.store import postgres_claims, sql_claims
from agentnb.store.claims import graph_filter
from agentnb.store.postgres_dialect import spell


def queue(store: Any, runs: int) -> Workflow:
    g = StateGraph("queued").add_node("a", lambda s: {})
    wf = g.set_entry_point("a").compile(store)
    for i in range(runs):
        wf.submit({"i": i})
    return wf


def test_a_sqlite_claim_reads_the_waiting_runs_in_index_order_without_sorting_them(
    tmp_path: Path,
) -> None:
    with SqliteCheckpointer(tmp_path / "q.sqlite3") as store:
        wf = queue(store, 50)
        where, params = graph_filter({wf.name: wf.shape})
        sql, args = sql_claims.update(where, params, 4, "me", 30)
        plan = store._db.execute(f"EXPLAIN QUERY PLAN {sql}", args).fetchall()
        waiting = [row for row in plan if "runs_waiting" in row[3]]
        assert waiting, plan
        assert waiting[0][3].startswith("SCAN runs USING INDEX runs_waiting")
        # Nothing sorts the waiting runs: no temporary B-tree under their subquery.
        parent = waiting[0][1]
        assert not [row for row in plan if row[1] == parent and "TEMP B-TREE" in row[3]], plan
        assert any("runs_by_lease" in row[3] for row in plan), plan
        assert [r.run_id for r in store.claim("me", {wf.name: wf.shape}, limit=4)]


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += _nodes(child)
    return found


def test_a_postgres_claim_locks_the_waiting_runs_in_index_order_without_sorting_them(
    pg_dsn: str,
) -> None:
    import psycopg

    from agentnb import PostgresCheckpointer

    with PostgresCheckpointer(pg_dsn) as store:
        wf = queue(store, 50)
        where, params = graph_filter({wf.name: wf.shape})
        sql, args = postgres_claims.update(where, params, 4, "me", 30)
        with psycopg.connect(pg_dsn) as conn:
            [[raw]] = conn.execute(f"EXPLAIN (FORMAT JSON) {spell(sql)}", args).fetchall()
            conn.rollback()
        tree = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
        scans = [n for n in _nodes(tree) if n.get("Index Name") == "runs_waiting"]
        assert scans, tree
        locks = [n for n in _nodes(tree) if n["Node Type"] == "LockRows"]
        waiting = [n for n in locks if any(s in _nodes(n) for s in scans)]
        assert len(waiting) == 1
        # Between the row locks and the index scan, nothing sorts the queue.
        under = _nodes(waiting[0])
        assert not [n for n in under if n["Node Type"] == "Sort"], waiting[0]
        assert [r.run_id for r in store.claim("me", {wf.name: wf.shape}, limit=4)]
