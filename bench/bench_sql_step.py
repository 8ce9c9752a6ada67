"""The SQL of a durable step alone, beside the floor: where the SQLite side of a step goes.

A NORMAL step of ``bench_runtime.py``'s chain is about 40 µs against a 17 µs floor; this
splits off its SQL. Each figure is µs per statement triple ``BEGIN IMMEDIATE`` / the step's
one statement / ``COMMIT``, 200 in a row on a fresh file, the min of 15 rounds, all kinds
alternating in one process (same machine, same moment):

* ``agentnb``: the real schema (a file made by :class:`SqliteCheckpointer`) and the real
  statement (:data:`~agentnb.store.sql_steps.FENCED_ENTRY`) with a delta row of the chain;
* ``no entry index``: the same without the two partial indexes on ``entries`` — what they
  cost every step (``entries_chain`` is written by every checkpoint row);
* ``unfenced``: a plain ``INSERT ... VALUES`` — what the lease check in the statement costs;
* ``floor``: bench_runtime's (plain sqlite3, a 3-column table, ``json.dumps`` included).

Run with ``python bench/bench_sql_step.py``.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import SqliteCheckpointer
from agentnb.store.sql_rows import ENTRY
from agentnb.store.sql_steps import FENCED_ENTRY

STEPS, ROUNDS = 200, 15
RUN = "9d54535d0a5cc8e6624d7437f78de6e8"
STATE = '{"set":{"count":2099,"last":"n2099"}}'
EVENTS = (
    '[[202,100,"node_start","n2099",{},1796151330.957271693],[203,101,"state_update","n2099",'
    '{"delta":{"count":2099,"last":"n2099"},"next":"n2100"},1796151330.957276060]]'
)


def schema(folder: Path) -> list[str]:
    """The tables and indexes of ``runs`` and ``entries``, as the store creates them."""
    with SqliteCheckpointer(folder / "schema.sqlite3") as store:
        rows = store._db.execute(
            "SELECT type, sql FROM sqlite_master WHERE tbl_name IN ('runs', 'entries') "
            "AND sql IS NOT NULL ORDER BY type DESC"  # tables before their indexes
        ).fetchall()
    return [f"{kind}\t{sql}" for kind, sql in rows]


def agentnb_steps(path: Path, ddl: list[str], *, indexes: bool, fenced: bool) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA auto_vacuum=INCREMENTAL")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    for line in ddl:
        kind, sql = line.split("\t", 1)
        if indexes or kind != "index" or " ON entries " not in sql:
            db.execute(sql)
    db.execute(
        "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, status_at, "
        "lease_owner, lease_expires, fence) VALUES (?, 'chain', 's', 'running', 9999, 0, 0, "
        "'me', ?, 5)",
        (RUN, time.time() + 3600),
    )
    plain = f"{ENTRY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    start = time.perf_counter()
    for i in range(STEPS):
        row = (RUN, 1000 + i, i, "n2099", STATE, EVENTS, time.time(), None, "delta")
        db.execute("BEGIN IMMEDIATE")
        if fenced:
            cursor = db.execute(FENCED_ENTRY, (*row, RUN, 5, time.time()))
        else:
            cursor = db.execute(plain, row)
        db.execute("COMMIT")
        assert cursor.rowcount == 1
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed / STEPS * 1e6


def floor_steps(path: Path) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE cp (run TEXT, step INT, state TEXT, PRIMARY KEY (run, step))")
    start = time.perf_counter()
    for i in range(STEPS):
        state = json.dumps({"count": i, "last": f"n{i}", "messages": []})
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO cp VALUES (?, ?, ?)", ("r", i, state))
        db.execute("COMMIT")
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed / STEPS * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        ddl = schema(folder)
        kinds = {
            "agentnb": {"indexes": True, "fenced": True},
            "no entry index": {"indexes": False, "fenced": True},
            "unfenced": {"indexes": True, "fenced": False},
        }
        best: dict[str, float] = {}
        for n in range(ROUNDS):
            for name, options in kinds.items():
                us = agentnb_steps(folder / f"{name}{n}.sqlite3", ddl, **options)
                best[name] = min(best.get(name, us), us)
            us = floor_steps(folder / f"floor{n}.sqlite3")
            best["floor"] = min(best.get("floor", us), us)
    print(f"SQL of a NORMAL step, µs (min of {ROUNDS} x {STEPS} steps)")
    for name, us in best.items():
        print(f"{name:<16}{us:>7.1f}   {us / best['floor']:.2f}x the floor")


if __name__ == "__main__":
    main()
