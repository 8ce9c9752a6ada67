"""Runtime benchmark: cost per step and per approval cycle, beside raw SQLite floors.

Run with ``make bench`` (or ``python bench/bench_runtime.py``). Every figure is measured in
this run, next to a floor measured in the same run on the same machine:

* µs per step for a 200-node chain, in memory and with SQLite checkpoints, at
  ``synchronous=NORMAL`` (the default) and at ``FULL``;
* the durable-step floor at each level: plain sqlite3, one INSERT per step in its own
  transaction, same pragmas — measured in turns with the durable step (step, floor, step, floor…), the ratio
  being the median of the pairs' ratios, so the machine's drift between them cancels out;
* ms per approval cycle (start → pause → reopen the store → approve → done);
* the approval floor: one INSERT + one conditional UPDATE ... RETURNING, same pragmas,
  the database closed and reopened between them as the cycle reopens its store;
* ``import agentnb``: time and resident memory in a fresh interpreter;
* growth: the 2,000-step loop of ``bench_longrun.py`` (first and last 100 steps, the
  database, the whole run beside LangGraph's when the bench extra is installed).

Targets: ≤ 25 µs/step in memory; durable step ≤ 2x the floor at NORMAL and ≤ 1.5x at
FULL; ≤ 3x the approval floor per cycle; import ≤ 100 ms and ≤ 25 MiB; growth ≤ 1.3x,
≤ 3 MiB, ≤ 0.2x LangGraph's whole run. ``--steps N`` changes the growth run's length.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import MemoryCheckpointer, SqliteCheckpointer, StateGraph, Workflow
from agentnb.examples import build_refund_workflow

NODES = 200
REPEATS = 7


def best_of(fn: Callable[[], float], repeats: int = REPEATS) -> float:
    """The median of ``repeats`` measurements (each already a per-unit figure)."""
    fn()  # warm-up: imports, statement caches, page cache
    return statistics.median(fn() for _ in range(repeats))


def paired(
    measured: Callable[[], float], floor: Callable[[], float], repeats: int = REPEATS
) -> tuple[float, float, float]:
    """``measured`` and its ``floor`` taken in turns (measured, floor, measured, floor…),
    so a machine that slows down or speeds up between them biases neither: the median of
    each, and the median of the pairs' ratios."""
    measured()
    floor()  # warm-up, as best_of's
    pairs = [(measured(), floor()) for _ in range(repeats)]
    return (
        statistics.median(m for m, _ in pairs),
        statistics.median(f for _, f in pairs),
        statistics.median(m / f for m, f in pairs),
    )


def chain(store: object, nodes: int = NODES) -> Workflow:
    g = StateGraph("chain")
    for i in range(nodes):
        g.add_node(f"n{i}", lambda state, i=i: {"count": i, "last": f"n{i}"})
    g.set_entry_point("n0")
    for i in range(nodes - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    return g.compile(store, max_steps=nodes + 1)  # type: ignore[arg-type]


def per_step(make_store: Callable[[], object]) -> Callable[[], float]:
    def measure() -> float:
        store = make_store()
        wf = chain(store)
        run = wf.start({"count": 0, "messages": []})
        t = time.perf_counter()
        run.run()
        elapsed = time.perf_counter() - t
        assert run.status == "completed"
        close = getattr(store, "close", None)
        if close:
            close()
        return elapsed / NODES * 1e6

    return measure


def connect(path: str, synchronous: str = "NORMAL") -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute("PRAGMA busy_timeout=30000")
    return db


def step_floor(folder: Path, synchronous: str = "NORMAL") -> Callable[[], float]:
    """Plain sqlite3: one INSERT per step of a similar checkpoint row, its own transaction
    (the cheapest way to commit it, as a running step of the store does; an explicit
    ``BEGIN IMMEDIATE`` ... ``COMMIT`` around it is two statements more)."""
    counter = iter(range(10**9))

    def measure() -> float:
        db = connect(str(folder / f"floor{synchronous}{next(counter)}.sqlite3"), synchronous)
        db.execute("CREATE TABLE cp (run TEXT, step INT, state TEXT, PRIMARY KEY (run, step))")
        t = time.perf_counter()
        for i in range(NODES):
            state = json.dumps({"count": i, "last": f"n{i}", "messages": []})
            db.execute("INSERT INTO cp VALUES (?, ?, ?)", ("r", i, state))  # its own transaction
        elapsed = time.perf_counter() - t
        db.close()
        return elapsed / NODES * 1e6

    return measure


def approval_cycle(folder: Path) -> Callable[[], float]:
    counter = iter(range(10**9))

    def measure() -> float:
        path = str(folder / f"cycle{next(counter)}.sqlite3")
        SqliteCheckpointer(path).close()  # schema creation is not part of the cycle
        refunds: list[int] = []
        t = time.perf_counter()
        store = SqliteCheckpointer(path)
        run = build_refund_workflow(store, refunds).start({"requested": 1000})
        run.run()
        run_id = run.run_id
        store.close()
        store = SqliteCheckpointer(path)
        again = build_refund_workflow(store, refunds).attach(run_id)
        again.approve(by="bench")
        again.run()
        elapsed = time.perf_counter() - t
        assert again.status == "completed"
        assert refunds == [1000]
        store.close()
        return elapsed * 1e3

    return measure


def cycle_in_one_store(folder: Path) -> Callable[[], float]:
    """The same cycle without closing and reopening the store: what the reopen costs."""
    path = str(folder / "warm.sqlite3")
    store = SqliteCheckpointer(path)
    refunds: list[int] = []
    workflow = build_refund_workflow(store, refunds)

    def measure() -> float:
        t = time.perf_counter()
        run = workflow.start({"requested": 1000})
        run.run()
        run.approve(by="bench")
        run.run()
        elapsed = time.perf_counter() - t
        assert run.status == "completed"
        return elapsed * 1e3

    return measure


def reopen_cost(folder: Path) -> Callable[[], float]:
    """Open an existing database, write once, close: SQLite checkpoints the WAL on close."""
    path = str(folder / "reopen.sqlite3")
    SqliteCheckpointer(path).close()
    counter = iter(range(10**9))

    def measure() -> float:
        t = time.perf_counter()
        store = SqliteCheckpointer(path)
        build_refund_workflow(store).start({}, run_id=f"r{next(counter)}")
        store.close()
        return (time.perf_counter() - t) * 1e3

    return measure


def approval_floor(folder: Path) -> Callable[[], float]:
    """Plain sqlite3, shaped like the cycle: open, INSERT + COMMIT, close; reopen, one
    conditional UPDATE ... RETURNING + COMMIT, close (the cycle reopens its store too)."""
    counter = iter(range(10**9))

    def measure() -> float:
        path = str(folder / f"afloor{next(counter)}.sqlite3")
        db = connect(path)
        db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, status TEXT, state TEXT)")
        db.close()  # schema creation is not part of the floor, as it is not of the cycle
        t = time.perf_counter()
        db = connect(path)
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO runs VALUES ('r', 'pending', ?)", (json.dumps({"amount": 1000}),))
        db.execute("COMMIT")
        db.close()
        db = connect(path)
        db.execute("BEGIN IMMEDIATE")
        row = db.execute(
            "UPDATE runs SET status = 'running' WHERE id = 'r' AND status = 'pending' "
            "RETURNING state"
        ).fetchone()
        db.execute("COMMIT")
        db.close()
        elapsed = time.perf_counter() - t
        assert row is not None
        return elapsed * 1e3

    return measure


def import_cost() -> tuple[float, float, float]:
    # Peak RSS from /proc (VmHWM): ru_maxrss would include the parent's size before exec.
    hwm = (
        "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024"
    )
    code = (
        "import time; t = time.perf_counter(); import agentnb; "
        f"print((time.perf_counter() - t) * 1e3, {hwm})"
    )
    bare = f"print({hwm})"
    root = str(Path(__file__).resolve().parents[1])
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
        )
        ms, rss = map(float, out.stdout.split())
        runs.append((ms, rss))
    base = float(
        subprocess.run([sys.executable, "-c", bare], capture_output=True, text=True).stdout
    )
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), base


def growth(steps: int) -> list[tuple[str, str, str, str, bool]]:
    """The 2,000-step loop of bench_longrun (same code), as rows of this table."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_longrun import agentnb_run, langgraph_run

    with tempfile.TemporaryDirectory() as tmp:
        ours = agentnb_run(Path(tmp), steps)
        theirs = langgraph_run(Path(tmp), steps)
    ratio = ours["last"] / ours["first"]
    mib = ours["bytes"] / 2**20
    rows = [
        (
            f"growth, {steps} steps",
            f"{ratio:8.2f}x",
            f"{ours['first']:.0f} → {ours['last']:.0f} µs/step",
            "≤ 1.3x",
            ratio <= 1.3,
        ),
        ("database after them", f"{mib:8.2f} MiB", "full history and events", "≤ 3 MiB", mib <= 3),
    ]
    if theirs is not None:
        vs = ours["whole"] / theirs["whole"]
        rows.append(
            (
                "whole run vs LangGraph",
                f"{vs:8.2f}x",
                f"{ours['whole']:.2f} s vs {theirs['whole']:.2f} s",
                "≤ 0.2x",
                vs <= 0.2,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="length of the growth run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        counter = iter(range(10**9))
        memory = best_of(per_step(MemoryCheckpointer))
        durable, floor, normal_ratio = paired(
            per_step(lambda: SqliteCheckpointer(folder / f"steps{next(counter)}.sqlite3")),
            step_floor(folder),
        )
        durable_full, floor_full, full_ratio = paired(
            per_step(
                lambda: SqliteCheckpointer(
                    folder / f"full{next(counter)}.sqlite3", synchronous="FULL"
                )
            ),
            step_floor(folder, "FULL"),
        )
        cycle = best_of(approval_cycle(folder))
        warm = best_of(cycle_in_one_store(folder))
        reopen = best_of(reopen_cost(folder))
        afloor = best_of(approval_floor(folder))
    ms, rss, base_rss = import_cost()
    grown = growth(args.steps)

    rows = [
        ("step, in memory", f"{memory:8.1f} µs", "", "≤ 25 µs", memory <= 25),
        (
            "step, SQLite NORMAL",
            f"{durable:8.1f} µs",
            f"{normal_ratio:5.2f}x floor {floor:.1f} µs",
            "≤ 2x",
            normal_ratio <= 2,
        ),
        (
            "step, SQLite FULL",
            f"{durable_full:8.1f} µs",
            f"{full_ratio:5.2f}x floor {floor_full:.1f} µs",
            "≤ 1.5x",
            full_ratio <= 1.5,
        ),
        (
            "approval cycle",
            f"{cycle:8.2f} ms",
            f"{cycle / afloor:5.2f}x floor {afloor:.3f} ms",
            "≤ 3x",
            cycle / afloor <= 3,
        ),
        ("import agentnb: time", f"{ms:8.1f} ms", "", "≤ 100 ms", ms <= 100),
        (
            "import agentnb: RSS",
            f"{rss:8.1f} MiB",
            f"(bare python {base_rss:.1f} MiB)",
            "≤ 25 MiB",
            rss <= 25,
        ),
        *grown,
    ]
    print(
        f"agentnb runtime benchmark — {NODES}-node chain, median of {REPEATS} (durable steps "
        f"and floors in turns, ratio = median of the pairs'), Python "
        f"{sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}"
    )
    print(f"{'what':<26}{'measured':>14}   {'vs floor':<30}{'target':<10}met")
    for name, value, ratio, target, met in rows:
        print(f"{name:<26}{value:>14}   {ratio:<30}{target:<10}{'yes' if met else 'NO'}")
    print(
        f"\nwhere the approval cycle goes: the same cycle in one open store {warm:.2f} ms "
        f"({warm / afloor:.1f}x the floor); opening a database, one write, closing it "
        f"{reopen:.2f} ms (the close checkpoints the WAL file into the database, with fsync)"
    )


if __name__ == "__main__":
    main()
