"""The SQL of a durable step alone, beside the floor: where the SQLite side of a step goes.

A NORMAL step of ``bench_runtime.py``'s chain is about 27-30 µs against a 17 µs floor
(38-54 µs before migration 0012 and the one-statement step); this splits off its SQL.
Each figure is µs per statement, each its own transaction as a running step of the store
is (:meth:`SqliteCheckpointer.commit`), 200 in a row on a fresh file, the min (and median)
of 15 rounds, all kinds alternating in one process (same machine, same moment):

* ``agentnb``: the real schema (a file made by :class:`SqliteCheckpointer`) and the real
  statement (:data:`~agentnb.store.sql_steps.FENCED_ENTRY`) with a delta row of the chain;
* ``schema 0011``: the same statement on the journal as it was before migration 0012 —
  the bodies before ``at``, ``tasks`` and ``kind``, and the covering index
  ``entries_chain`` every checkpoint row wrote a second B-tree page for;
* ``unfenced``: a plain ``INSERT ... VALUES`` — what the lease check in the statement costs;
* ``floor``: bench_runtime's (plain sqlite3, a 3-column table, ``json.dumps`` included).

Run with ``python bench/bench_sql_step.py`` (``--synchronous FULL`` for the same at FULL,
where each commit's WAL frames are synced: one page a step now, two with schema 0011).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb.store.migrate import LATEST, MIGRATIONS, _statements
from agentnb.store.sql_rows import ENTRY
from agentnb.store.sql_steps import FENCED_ENTRY

STEPS, ROUNDS = 200, 15
LEVEL = ["NORMAL"]
"""The ``synchronous`` level measured (``--synchronous``)."""
RUN = "9d54535d0a5cc8e6624d7437f78de6e8"
STATE = '{"set":{"count":2099,"last":"n2099"}}'
EVENTS = (
    '[[202,100,"node_start","n2099",{},1796151330.957271693],[203,101,"state_update","n2099",'
    '{"delta":{"count":2099,"last":"n2099"},"next":"n2100"},1796151330.957276060]]'
)


def schema(folder: Path, version: int = LATEST) -> list[str]:
    """The tables and indexes of ``runs`` and ``entries`` at schema ``version``, as the
    store's migrations create them in a new file."""
    db = sqlite3.connect(folder / f"schema{version}.sqlite3", isolation_level=None)
    folder_sql = resources.files("agentnb.store") / "migrations"
    for name in MIGRATIONS[:version]:
        for statement in _statements((folder_sql / name).read_text("utf-8")):
            db.execute(statement)
    rows = db.execute(
        "SELECT type, sql FROM sqlite_master WHERE tbl_name IN ('runs', 'entries') "
        "AND sql IS NOT NULL ORDER BY type DESC"  # tables before their indexes
    ).fetchall()
    db.close()
    return [f"{kind}\t{sql}" for kind, sql in rows]


def agentnb_steps(path: Path, ddl: list[str], *, fenced: bool) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA auto_vacuum=INCREMENTAL")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={LEVEL[0]}")
    for line in ddl:
        db.execute(line.split("\t", 1)[1])
    db.execute(
        "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, status_at, "
        "lease_owner, lease_expires, fence) VALUES (?, 'chain', 's', 'running', 9999, 0, 0, "
        "'me', ?, 5)",
        (RUN, time.time() + 3600),  # an hour's lease: SQLite's clock agrees with this one
    )
    plain = f"{ENTRY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    start = time.perf_counter()
    for i in range(STEPS):
        row = (RUN, 1000 + i, i, "n2099", STATE, EVENTS, time.time(), None, "delta")
        if fenced:
            cursor = db.execute(FENCED_ENTRY, (*row, RUN, 5, 15.0))  # half a 30 s lease
        else:
            cursor = db.execute(plain, row)
        assert cursor.rowcount == 1
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed / STEPS * 1e6


def floor_steps(path: Path) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={LEVEL[0]}")
    db.execute("CREATE TABLE cp (run TEXT, step INT, state TEXT, PRIMARY KEY (run, step))")
    start = time.perf_counter()
    for i in range(STEPS):
        state = json.dumps({"count": i, "last": f"n{i}", "messages": []})
        db.execute("INSERT INTO cp VALUES (?, ?, ?)", ("r", i, state))
    elapsed = time.perf_counter() - start
    db.close()
    return elapsed / STEPS * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synchronous", choices=["NORMAL", "FULL"], default="NORMAL")
    LEVEL[0] = parser.parse_args().synchronous
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        current, before = schema(folder), schema(folder, 11)
        kinds: dict[str, Callable[[Path], float]] = {
            "agentnb": lambda path: agentnb_steps(path, current, fenced=True),
            "schema 0011": lambda path: agentnb_steps(path, before, fenced=True),
            "unfenced": lambda path: agentnb_steps(path, current, fenced=False),
            "floor": floor_steps,
        }
        found: dict[str, list[float]] = {name: [] for name in kinds}
        for n in range(ROUNDS):
            for name, steps in kinds.items():
                found[name].append(steps(folder / f"{name}{n}.sqlite3"))
    floor = min(found["floor"]), statistics.median(found["floor"])
    print(f"SQL of a {LEVEL[0]} step, µs (min / median of {ROUNDS} x {STEPS} steps)")
    for name, figures in found.items():
        low, mid = min(figures), statistics.median(figures)
        print(
            f"{name:<14}{low:>7.1f} /{mid:>6.1f}   "
            f"{low / floor[0]:.2f}x / {mid / floor[1]:.2f}x the floor"
        )


if __name__ == "__main__":
    main()
