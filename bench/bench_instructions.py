"""Instructions per step under callgrind: the step's cost, repeatable on a noisy machine.

Wall-clock figures on a shared box move by 20 % between runs; instruction counts move by
well under 1 %. This runs 2,200 and 200 steps of one 2,200-node chain (its entry routes
the short run to the node 200 before the end) under ``valgrind --tool=callgrind``, in a
fresh interpreter each, and prints

    (instructions of the long run - instructions of the short one) / 2,000

so start-up, imports, building the graph and creating the run cancel out and what is
left is the steady step: in memory and on SQLite at ``synchronous=NORMAL`` (SQLite's own
instructions included; an fsync costs none, so FULL is left to ``bench_runtime.py``), and for the
durable step's floor (plain sqlite3, one INSERT per step in its own transaction, as in
bench_runtime).

A drive makes a trip to the event loop every 5 ms of wall time (the driver's
``_YIELD_EVERY``, so a cancellation lands between synchronous steps): every ~150 steps at
full speed, but every few steps under callgrind, which runs ~50x slower, and more often
the more the machine is loaded. Those trips (~27k instructions each) would be most of
the run-to-run spread and ~6.7k of each step's count, so the measured program sets the
cadence beyond the run's length and the count is the step's own; ``--trips`` keeps the
5 ms (the count as this bench gave it before).

``--imports`` counts ``import agentnb`` beside ``import statemachine`` (the bare
interpreter's start left out), bytecode cached for both. ``--approval`` also counts bench_runtime's approval cycle and its floor the same way
(``CYCLES`` + 1 cycles minus one, per cycle): the cycle's CPU beside its floor's, the
ratio bench_runtime measures with its fsyncs (which cost no instructions) left out.

Run with ``python bench/bench_instructions.py`` (needs ``valgrind``); ``--code DIR`` runs
another checkout's ``agentnb`` (e.g. ``git archive main``, unpacked) to compare.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

LONG, SHORT = 2200, 200
CYCLES = 5


def chain_run(store_kind: str, nodes: int, folder: str, trips: bool = False) -> None:
    """The measured program: run the last ``nodes`` nodes of a ``LONG``-node chain (the
    graph is the same size either way, so building it cancels out too); without
    ``trips``, no timed trip to the event loop (see above)."""
    if store_kind == "floor":
        floor_run(nodes, folder)
        return
    from agentnb import MemoryCheckpointer, SqliteCheckpointer, StateGraph
    from agentnb.graph import driver

    if not trips:
        driver._YIELD_EVERY = float("inf")  # (a bench's knob: see the module's docstring)

    store: object
    if store_kind == "memory":
        store = MemoryCheckpointer()
    else:
        store = SqliteCheckpointer(os.path.join(folder, f"chain{nodes}.sqlite3"))
    g = StateGraph("chain")
    for i in range(LONG):
        g.add_node(f"n{i}", lambda state, i=i: {"count": i, "last": f"n{i}"})
    for i in range(LONG - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    first = f"n{LONG - nodes}"
    g.add_node("enter", lambda state: None)
    g.set_entry_point("enter")
    g.add_conditional_edges("enter", lambda state: state["first"], ["n0", first])
    workflow = g.compile(store, max_steps=LONG + 2)  # type: ignore[arg-type]
    run = workflow.start({"count": 0, "messages": [], "first": first})
    run.run()
    assert run.status == "completed", run.status


def cycle_run(kind: str, cycles: int, folder: str, prepare: bool = False) -> None:
    """The measured program for ``--approval``: one warm-up, then ``cycles`` approval
    cycles of bench_runtime (``kind="cycle"``) or of its floor (``"afloor"``), each on a
    file that an unmeasured run with ``prepare`` made beforehand (a new store's schema),
    so preparing is not counted and importing cancels out."""
    import agentnb  # noqa: F401  (the --code checkout's, before bench_runtime's own)

    # isort: split
    import bench_runtime

    paths = [os.path.join(folder, f"{kind}{i}.sqlite3") for i in range(cycles + 1)]
    for path in paths:  # the first one is the warm-up: imports done on first use
        if prepare and kind == "cycle":
            bench_runtime.SqliteCheckpointer(path).close()
        elif prepare:
            bench_runtime.prepare_floor(path)
        elif kind == "cycle":
            bench_runtime.one_cycle(path, [])
        else:
            bench_runtime.one_floor(path)


def floor_run(nodes: int, folder: str) -> None:
    """bench_runtime's durable-step floor: plain sqlite3, one INSERT per step of a similar
    checkpoint row in its own transaction, same pragmas."""
    import json
    import sqlite3

    db = sqlite3.connect(os.path.join(folder, f"floor{nodes}.sqlite3"), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=30000")
    db.execute("CREATE TABLE cp (run TEXT, step INT, state TEXT, PRIMARY KEY (run, step))")
    for i in range(nodes):
        state = json.dumps({"count": i, "last": f"n{i}", "messages": []})
        db.execute("INSERT INTO cp VALUES (?, ?, ?)", ("r", i, state))  # its own transaction
    db.close()


def instructions(code: Path, store_kind: str, nodes: int, folder: Path, trips: bool) -> int:
    out = folder / f"cg.{store_kind}.{nodes}.out"
    program = (
        "import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2]); "
        "from bench_instructions import chain_run, cycle_run; "
        "chain_run(sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6] == 'trips') "
        "if sys.argv[3] not in ('cycle', 'afloor') else "
        "cycle_run(sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6] == 'prepare')"
    )
    here = str(Path(__file__).resolve().parent)
    run = [sys.executable, "-c", program, here, str(code), store_kind, str(nodes), str(folder)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if store_kind in ("cycle", "afloor"):  # the files first, not measured
        subprocess.run([*run, "prepare"], check=True, capture_output=True, env=env)
    subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            *run,
            "trips" if trips else "",
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    assert match is not None, f"no totals in {out}"
    return int(match.group(1))


def import_instructions(code: Path, statement: str, folder: Path) -> int:
    """Instructions of a fresh interpreter running ``statement`` from ``code``, its
    bytecode cached (a warm-up run writes it to a throwaway ``pycache_prefix``, as
    bench_runtime's import timing does)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    run = [sys.executable, "-X", f"pycache_prefix={folder / 'pyc'}", "-c", statement]
    subprocess.run(run, check=True, capture_output=True, cwd=code, env=env)
    out = folder / "cg.import.out"
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    subprocess.run([*valgrind, *run], check=True, capture_output=True, cwd=code, env=env)
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    assert match is not None, f"no totals in {out}"
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--code",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="the checkout whose agentnb is measured (default: this one)",
    )
    parser.add_argument(
        "--stores",
        default="memory,sqlite,floor",
        help="comma-separated: memory, sqlite, floor (plain sqlite3, as bench_runtime's); "
        "empty for none",
    )
    parser.add_argument(
        "--approval",
        action="store_true",
        help="also bench_runtime's approval cycle and its floor, per cycle (fsyncs cost none)",
    )
    parser.add_argument(
        "--imports",
        action="store_true",
        help="also import agentnb and import statemachine (python-statemachine), beyond "
        "the bare interpreter's start",
    )
    parser.add_argument(
        "--trips",
        action="store_true",
        help="keep the drive's 5 ms trips to the event loop (more under load: see above)",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: apt-get install valgrind")
    code = args.code.resolve()
    print(f"instructions per step (callgrind), {LONG} - {SHORT} nodes, agentnb from {code}")
    per_step: dict[str, float] = {}
    for kind in filter(None, args.stores.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            long = instructions(code, kind, LONG, Path(tmp), args.trips)
            short = instructions(code, kind, SHORT, Path(tmp), args.trips)
        per_step[kind] = (long - short) / (LONG - SHORT)
        print(f"{kind:<8}{per_step[kind]:>12,.0f} instructions/step")
    if "sqlite" in per_step and "floor" in per_step:
        print(f"sqlite / floor: {per_step['sqlite'] / per_step['floor']:.2f}x")
    if args.approval:
        per_cycle: dict[str, float] = {}
        for kind in ("cycle", "afloor"):
            with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as other:
                many = instructions(code, kind, CYCLES + 1, Path(tmp), False)
                one = instructions(code, kind, 1, Path(other), False)
            per_cycle[kind] = (many - one) / CYCLES
            print(f"{kind:<8}{per_cycle[kind]:>12,.0f} instructions/approval cycle")
        print(f"approval cycle / its floor: {per_cycle['cycle'] / per_cycle['afloor']:.2f}x")
    if args.imports:
        with tempfile.TemporaryDirectory() as tmp:
            bare = import_instructions(code, "pass", Path(tmp))
            cost = {
                name: import_instructions(code, f"import {name}", Path(tmp)) - bare
                for name in ("agentnb", "statemachine")
            }
        for name, count in cost.items():
            print(f"import {name:<14}{count:>14,} instructions")
        print(f"agentnb / statemachine: {cost['agentnb'] / cost['statemachine']:.2f}x")


if __name__ == "__main__":
    main()
