"""Runtime benchmark: cost per step and per approval cycle, beside raw SQLite floors.

Run with ``make bench`` (or ``python bench/bench_runtime.py``; ``--parts approval,import``
runs some of it). Every figure is measured in this run, next to a floor or a yardstick
measured in the same run on the same machine:

* µs per step for a 200-node chain, in memory and with SQLite checkpoints, at
  ``synchronous=NORMAL`` (the default) and at ``FULL``;
* the durable-step floor at each level: plain sqlite3, one INSERT per step in its own
  transaction, same pragmas — measured in turns with the durable step (step, floor, step,
  floor…), the ratio being the median of the pairs' ratios, so the machine's drift between
  them cancels out;
* ms per approval cycle (start → pause → reopen the store → approve → done), in turns
  with its floor: one INSERT + one conditional UPDATE ... RETURNING, same pragmas, the
  database closed and reopened between them as the cycle reopens its store; beside it the
  same floor with its UPDATE at ``FULL``, the promise the cycle keeps (a decision answered
  "accepted" survives a power cut), and the fsyncs of each, counted by ``strace`` when it
  is installed (a count, steady on a loaded machine where the times are not);
* ``import agentnb``: time and resident memory in a fresh interpreter, in turns with
  ``import statemachine`` (python-statemachine, the ``bench`` extra), bytecode cached for
  both; and the README's first line, which also loads the SQLite store;
* growth: the 2,000-step loop of ``bench_longrun.py`` (first and last 100 steps, the
  database, the whole run beside LangGraph's when the bench extra is installed).

Targets: ≤ 25 µs/step in memory and ≤ 1.6x ``transitions``' per-transition cost on the
same chain; durable step ≤ 2x the floor at NORMAL and ≤ 1.5x at FULL; ≤ 3x the approval
floor per cycle, with no fsync beyond the minimum its promises take: the floor's, one for
the decision and one per ``ctx.once`` effect recorded (the refund records one), both
committed at FULL (docs/guides/durability.md); import ≤ 100 ms, ≤ python-statemachine's
and ≤ 25 MiB; growth ≤ 1.3x, ≤ 3 MiB, ≤ 0.2x LangGraph's whole run. ``--steps N`` changes
the growth run's length.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
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


def per_step(
    make_store: Callable[[], object], clock: Callable[[], float] = time.perf_counter
) -> Callable[[], float]:
    """µs per step of the chain on a new store, by ``clock`` (wall time unless told)."""

    def measure() -> float:
        store = make_store()
        wf = chain(store)
        run = wf.start({"count": 0, "messages": []})
        t = clock()
        run.run()
        elapsed = clock() - t
        assert run.status == "completed"
        close = getattr(store, "close", None)
        if close:
            close()
        return elapsed / NODES * 1e6

    return measure


def transitions_chain(nodes: int = NODES) -> Callable[[], float] | None:
    """The yardstick of the in-memory step: ``transitions``' per-transition cost on the same
    chain, a ``Machine`` of ``nodes`` states each moved on by one ``step`` trigger whose
    callback does what the chain's node does (two fields set); ``None`` without the
    library (the ``bench`` extra). CPU time, as the in-memory step it is paired with:
    both use nothing but the CPU, and on a loaded machine preemption falls on the longer
    run of the two (ours), which wall time would count against it (7x instead of 2.5x
    here under a load of 7 on 2 cores)."""
    try:
        from transitions import Machine
    except ImportError:
        return None

    class Model:
        count = 0
        last = ""

    def measure() -> float:
        model = Model()
        machine = Machine(model=model, states=[f"n{i}" for i in range(nodes)], initial="n0")
        for i in range(nodes - 1):

            def node(i: int = i) -> None:
                model.count, model.last = i, f"n{i}"

            machine.add_transition("step", f"n{i}", f"n{i + 1}", after=node)
        trigger: Callable[[], bool] = model.step  # type: ignore[attr-defined]
        t = time.process_time()
        for _ in range(nodes - 1):
            trigger()
        elapsed = time.process_time() - t
        assert model.state == f"n{nodes - 1}"  # type: ignore[attr-defined]
        return elapsed / (nodes - 1) * 1e6

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


EFFECTS_PER_CYCLE = 1
"""The ``ctx.once`` effects one approval cycle records: the refund's payment."""


def one_cycle(path: str, refunds: list[int]) -> None:
    """One approval cycle on a prepared file: start, pause, close; reopen, approve, finish."""
    store = SqliteCheckpointer(path)
    run = build_refund_workflow(store, refunds).start({"requested": 1000})
    run.run()
    run_id = run.run_id
    store.close()
    store = SqliteCheckpointer(path)
    again = build_refund_workflow(store, refunds).attach(run_id)
    again.approve(by="bench")
    again.run()
    status = again.status
    store.close()
    assert status == "completed"


def approval_cycle(folder: Path) -> Callable[[], float]:
    counter = iter(range(10**9))

    def measure() -> float:
        path = str(folder / f"cycle{next(counter)}.sqlite3")
        SqliteCheckpointer(path).close()  # schema creation is not part of the cycle
        refunds: list[int] = []
        t = time.perf_counter()
        one_cycle(path, refunds)
        elapsed = time.perf_counter() - t
        assert refunds == [1000]
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


def prepare_floor(path: str) -> None:
    db = connect(path)
    db.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, status TEXT, state TEXT)")
    db.close()  # schema creation is not part of the floor, as it is not of the cycle


def one_floor(path: str, decision: str = "NORMAL") -> None:
    """Plain sqlite3, shaped like the cycle: open, INSERT + COMMIT, close; reopen, one
    conditional UPDATE ... RETURNING + COMMIT at ``decision``'s level, close."""
    db = connect(path)
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO runs VALUES ('r', 'pending', ?)", (json.dumps({"amount": 1000}),))
    db.execute("COMMIT")
    db.close()
    db = connect(path, decision)
    db.execute("BEGIN IMMEDIATE")
    row = db.execute(
        "UPDATE runs SET status = 'running' WHERE id = 'r' AND status = 'pending' RETURNING state"
    ).fetchone()
    db.execute("COMMIT")
    db.close()
    assert row is not None


def approval_floor(folder: Path, decision: str = "NORMAL") -> Callable[[], float]:
    """The floor of the approval cycle (:func:`one_floor`): the cycle reopens its store, so
    the floor closes and reopens its database too. ``decision="FULL"``: the UPDATE keeps
    the cycle's promise (an acknowledged decision survives a power cut) — at NORMAL it is
    durable only once the close has checkpointed it."""
    counter = iter(range(10**9))

    def measure() -> float:
        path = str(folder / f"afloor{decision}{next(counter)}.sqlite3")
        prepare_floor(path)
        t = time.perf_counter()
        one_floor(path, decision)
        return (time.perf_counter() - t) * 1e3

    return measure


def fsyncs(folder: Path) -> dict[str, int] | None:
    """fsync + fdatasync calls of one approval cycle and of its floors, counted by
    ``strace -f`` in a fresh interpreter running that alone on a prepared file (None
    without strace). A count, not a time: the same on a loaded machine."""
    strace = shutil.which("strace")
    if strace is None:
        return None
    here = str(Path(__file__).resolve().parent)
    calls = {
        "cycle": "b.one_cycle(path, [])",
        "floor": "b.one_floor(path)",
        "floor, decision at FULL": "b.one_floor(path, 'FULL')",
    }
    counts = {}
    for name, call in calls.items():
        path = str(folder / f"fsyncs{len(counts)}.sqlite3")
        if name == "cycle":
            SqliteCheckpointer(path).close()
        else:
            prepare_floor(path)
        log = folder / f"strace{len(counts)}.txt"
        code = f"import sys; sys.path.insert(0, {here!r}); import bench_runtime as b; path = {path!r}; {call}"
        subprocess.run(
            [
                strace,
                "-f",
                "-qq",
                "-e",
                "trace=fsync,fdatasync",
                "-o",
                str(log),
                sys.executable,
                "-c",
                code,
            ],
            check=True,
            capture_output=True,
        )
        counts[name] = sum(1 for line in log.read_text().splitlines() if "sync(" in line)
    return counts


IMPORTS = {
    "agentnb": "import agentnb",
    "agentnb + SqliteCheckpointer": "from agentnb import StateGraph, SqliteCheckpointer",
    "statemachine": "import statemachine",
}
"""What is imported, each in its own fresh interpreter: ``import agentnb``; the README's
first line (a store named loads its backend); python-statemachine, the yardstick."""


def import_costs(repeats: int = 9) -> dict[str, tuple[float, float]]:
    """Median ms and peak RSS (MiB) of each of :data:`IMPORTS`, taken in turns, with the
    time of the bare interpreter left out; ``"ratio"``: the median of the turns' agentnb /
    statemachine ratios (without python-statemachine, the ``bench`` extra, no yardstick).

    Every import reads its modules' bytecode caches, as an installed package's are: one
    warm-up run writes them to a throwaway ``pycache_prefix`` (``PYTHONDONTWRITEBYTECODE``
    is lifted for these runs: with it, a source checkout recompiles all of agentnb at
    every import while an installed yardstick reads its ``.pyc`` files)."""
    # Peak RSS from /proc (VmHWM): ru_maxrss would include the parent's size before exec.
    hwm = "int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
    root = str(Path(__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    statements = dict(IMPORTS)
    if importlib.util.find_spec("statemachine") is None:
        del statements["statemachine"]
    with tempfile.TemporaryDirectory() as cache:

        def once(statement: str) -> tuple[float, float]:
            code = (
                f"import time; t = time.perf_counter(); {statement}; "
                f"print((time.perf_counter() - t) * 1e3, {hwm} / 1024)"
            )
            command = [sys.executable, "-X", f"pycache_prefix={cache}", "-c", code]
            out = subprocess.run(
                command, capture_output=True, text=True, check=True, cwd=root, env=env
            )
            ms, rss = out.stdout.split()
            return float(ms), float(rss)

        for statement in statements.values():
            once(statement)  # warm-up: writes the bytecode caches
        turns = [{name: once(st) for name, st in statements.items()} for _ in range(repeats)]
    found = {
        name: (
            statistics.median(t[name][0] for t in turns),
            statistics.median(t[name][1] for t in turns),
        )
        for name in statements
    }
    if "statemachine" in statements:
        ratio = statistics.median(t["agentnb"][0] / t["statemachine"][0] for t in turns)
        found["ratio"] = (ratio, 0.0)
    bare = subprocess.run(
        [sys.executable, "-c", f"print({hwm} / 1024)"], capture_output=True, text=True
    )
    found["bare python"] = (0.0, float(bare.stdout))
    return found


def growth(steps: int) -> list[tuple[str, str, str, str, bool | None]]:
    """The 2,000-step loop of bench_longrun (same code), as rows of this table."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_longrun import agentnb_run, langgraph_run

    with tempfile.TemporaryDirectory() as tmp:
        ours = agentnb_run(Path(tmp), steps)
        theirs = langgraph_run(Path(tmp), steps)
    ratio = ours["last"] / ours["first"]
    mib = ours["bytes"] / 2**20
    rows: list[tuple[str, str, str, str, bool | None]] = [
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


PARTS = ("steps", "approval", "import", "growth")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="length of the growth run")
    parser.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated, of {', '.join(PARTS)} (default: all)",
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if not parts <= set(PARTS):
        parser.error(f"--parts: choose among {', '.join(PARTS)}")
    rows: list[tuple[str, str, str, str, bool | None]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "steps" in parts:
            rows.extend(step_rows(folder))
        if "approval" in parts:
            approval, note = approval_rows(folder)
            rows.extend(approval)
            notes.append(note)
    if "import" in parts:
        rows.extend(import_rows())
    if "growth" in parts:
        rows.extend(growth(args.steps))

    print(
        f"agentnb runtime benchmark — {NODES}-node chain, median of {REPEATS} (measured and "
        f"floor in turns, ratio = median of the pairs'), Python "
        f"{sys.version.split()[0]}, SQLite {sqlite3.sqlite_version}"
    )
    print(f"{'what':<30}{'measured':>12}   {'vs floor':<34}{'target':<12}met")
    for name, value, ratio, target, met in rows:
        verdict = "" if met is None else "yes" if met else "NO"
        print(f"{name:<30}{value:>12}   {ratio:<34}{target:<12}{verdict}")
    for note in notes:
        print(f"\n{note}")


def step_rows(folder: Path) -> list[tuple[str, str, str, str, bool | None]]:
    counter = iter(range(10**9))
    yardstick = transitions_chain()
    if yardstick is None:
        memory, vs_transitions = best_of(per_step(MemoryCheckpointer)), None
    else:
        cpu = per_step(MemoryCheckpointer, time.process_time)
        memory = best_of(per_step(MemoryCheckpointer))
        memory_cpu, per_transition, vs_transitions = paired(cpu, yardstick)
    durable, floor, normal_ratio = paired(
        per_step(lambda: SqliteCheckpointer(folder / f"steps{next(counter)}.sqlite3")),
        step_floor(folder),
    )
    durable_full, floor_full, full_ratio = paired(
        per_step(
            lambda: SqliteCheckpointer(folder / f"full{next(counter)}.sqlite3", synchronous="FULL")
        ),
        step_floor(folder, "FULL"),
    )
    rows: list[tuple[str, str, str, str, bool | None]] = [
        ("step, in memory", f"{memory:8.1f} µs", "", "≤ 25 µs", memory <= 25)
    ]
    if vs_transitions is not None:
        rows.append(
            (
                "  vs transitions",
                f"{vs_transitions:8.2f}x",
                f"CPU {memory_cpu:.1f} vs transitions {per_transition:.1f} µs",
                "≤ 1.6x",
                vs_transitions <= 1.6,
            )
        )
    return [
        *rows,
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
    ]


def approval_rows(folder: Path) -> tuple[list[tuple[str, str, str, str, bool | None]], str]:
    """The cycle against its floor (the target), against the floor deciding at FULL as the
    cycle does, and its fsyncs; and a note on where its time goes."""
    cycle, afloor, ratio = paired(approval_cycle(folder), approval_floor(folder))
    _, afloor_full, ratio_full = paired(approval_cycle(folder), approval_floor(folder, "FULL"))
    warm = best_of(cycle_in_one_store(folder))
    reopen = best_of(reopen_cost(folder))
    rows: list[tuple[str, str, str, str, bool | None]] = [
        (
            "approval cycle",
            f"{cycle:8.2f} ms",
            f"{ratio:5.2f}x floor {afloor:.3f} ms",
            "≤ 3x",
            ratio <= 3,
        ),
        (
            "  vs a floor deciding at FULL",
            "",
            f"{ratio_full:5.2f}x floor {afloor_full:.3f} ms",
            "",
            None,
        ),
    ]
    counts = fsyncs(folder)
    if counts is not None:
        # The minimum: the floor's, plus one for the decision (FULL: acknowledged means on
        # disk) and one per effect the cycle records (the refund node's ctx.once, FULL too).
        minimum = counts["floor"] + 1 + EFFECTS_PER_CYCLE
        rows.append(
            (
                "  fsyncs per cycle",
                f"{counts['cycle']:8d}",
                f"floor {counts['floor']}, deciding at FULL {counts['floor, decision at FULL']}",
                f"≤ {minimum} (+1+{EFFECTS_PER_CYCLE})",
                counts["cycle"] <= minimum,
            )
        )
    note = (
        f"where the approval cycle goes: the same cycle in one open store {warm:.2f} ms "
        f"({warm / afloor:.1f}x the floor); opening a database, one write, closing it "
        f"{reopen:.2f} ms (the close checkpoints the WAL file into the database, with fsync)"
    )
    return rows, note


def import_rows() -> list[tuple[str, str, str, str, bool | None]]:
    found = import_costs()
    ms, rss = found["agentnb"]
    rows: list[tuple[str, str, str, str, bool | None]] = [
        ("import agentnb: time", f"{ms:8.1f} ms", "", "≤ 100 ms", ms <= 100)
    ]
    if "ratio" in found:
        yardstick = found["statemachine"][0]
        ratio = found["ratio"][0]
        with_store = found["agentnb + SqliteCheckpointer"][0]
        rows += [
            (
                "  vs python-statemachine",
                f"{ratio:8.2f}x",
                f"statemachine {yardstick:.1f} ms",
                "≤ 1x",
                ratio <= 1,
            ),
            (
                "  + SqliteCheckpointer",
                f"{with_store:8.1f} ms",
                f"{with_store / yardstick:5.2f}x statemachine",
                "",
                None,
            ),
        ]
    rows.append(
        (
            "import agentnb: RSS",
            f"{rss:8.1f} MiB",
            f"(bare python {found['bare python'][1]:.1f} MiB)",
            "≤ 25 MiB",
            rss <= 25,
        )
    )
    return rows


if __name__ == "__main__":
    main()
