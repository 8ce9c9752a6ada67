"""Long-run benchmark: does a step cost the same at step 2,000 as at step 1?

An agent loop's ``messages`` grows by one entry per step. This runs the workload of issue
#13 — one node that reads a counter and appends one 200-byte message, 2,000 steps, each
driven by ``run.step()`` on a ``SqliteCheckpointer`` — and prints, measured in this run:

* the database size after the run (checkpoints, events and all);
* µs per step over the first 100 and the last 100 steps (medians: one step slowed by
  another process on a shared machine does not move them), and their ratio (goal ≤ 1.3×);
* the whole run; listing ``history()`` of the finished run (goal ≤ 50 ms) and loading
  checkpoints' states from it, each once (cold): every step of the run, median, 99th
  percentile and worst (goal ≤ 5 ms);
* the same loads for a longer run of the same loop (``--long``, 10,000 steps: every
  37th step, so every distance from an anchor is met, and the last two). Beside wall
  time, each load's CPU time (on a shared machine the wall-clock worst of thousands of
  loads is a wait for a core), and the worst of the loads no full garbage collection ran
  in (one walks the whole process's heap, whatever allocation sets it off);
* ``store.prune()`` of the finished run: its time and the space it gave back;
* the same workload on LangGraph + SqliteSaver with ``durability="sync"`` when the bench
  extra is installed (goal: agentnb's whole run ≤ 0.2× LangGraph's).

Usage: ``python bench/bench_longrun.py [--steps N] [--long N]`` (``--long 0``: no longer run).
"""

from __future__ import annotations

import argparse
import gc
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import END, SqliteCheckpointer, StateGraph

MESSAGE = "x" * 200
WINDOW = 100


def size_of(path: Path) -> int:
    """Bytes of the database and its WAL/SHM files."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def loop(store: SqliteCheckpointer, steps: int) -> Any:
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": [MESSAGE]})
    g.set_entry_point("agent")
    g.add_conditional_edge(
        "agent", lambda s: "agent" if s["count"] < steps else END, ["agent", END]
    )
    return g.compile(store, max_steps=steps + 1).start({"count": 0, "messages": []})


def cold_loads(history: Any, stride: int) -> tuple[list[float], list[float], list[bool]]:
    """Seconds to load each sampled checkpoint's state, each once, checking it: wall
    time, the thread's CPU time (user and system: what the load costs, without the time
    it waited for a core on a shared machine), and whether a full garbage collection
    (generation 2, a walk of the whole process's heap) ran inside it."""
    wall, cpu, full = [], [], []
    sampled = list(history[::stride])
    if stride > 1:
        sampled += list(history[-2:])
    collections = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            collections.append(1)

    gc.callbacks.append(seen)
    try:
        for item in sampled:
            before = len(collections)
            c, t = time.thread_time(), time.perf_counter()
            state = item.state
            wall.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)
            full.append(len(collections) > before)
            assert len(state["messages"]) == item.step
    finally:
        gc.callbacks.remove(seen)
    return wall, cpu, full


def figures(times: tuple[list[float], list[float], list[bool]]) -> dict[str, float]:
    wall, cpu = sorted(times[0]), sorted(times[1])
    alone = [t for t, full in zip(times[1], times[2], strict=True) if not full]
    return {
        "load": statistics.median(wall) * 1e3,
        "load_p99": wall[min(len(wall) - 1, int(len(wall) * 0.99))] * 1e3,
        "load_max": wall[-1] * 1e3,
        "cpu": statistics.median(cpu) * 1e3,
        "cpu_max": cpu[-1] * 1e3,
        "cpu_max_alone": max(alone) * 1e3,
        "full_gcs": sum(times[2]),
        "loaded": len(wall),
    }


def agentnb_run(folder: Path, steps: int) -> dict[str, Any]:
    path = folder / "agentnb.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = loop(store, steps)
        times = []
        begin = time.perf_counter()
        while run.status == "running":
            t = time.perf_counter()
            run.step()
            times.append(time.perf_counter() - t)
        whole = time.perf_counter() - begin
        assert run.status == "completed", run.status
        assert len(run.state["messages"]) == steps
        t = time.perf_counter()
        history = run.history()
        history_s = time.perf_counter() - t
        assert len(history) >= steps
        loads = cold_loads(history, 1)
    with sqlite3.connect(path) as db:  # fold the WAL in so the size is the data's
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = size_of(path)
    with SqliteCheckpointer(path) as store:
        t = time.perf_counter()
        pruned = store.prune(before=time.time() + 1)
        prune_s = time.perf_counter() - t
        assert pruned.runs == (run.run_id,)
    return {
        "prune": prune_s,
        "after_prune": size_of(path),
        "first": statistics.median(times[:WINDOW]) * 1e6,
        "last": statistics.median(times[-WINDOW:]) * 1e6,
        "whole": whole,
        "history": history_s * 1e3,
        **figures(loads),
        "bytes": size,
    }


def long_run(folder: Path, steps: int) -> dict[str, Any]:
    """The loads of a longer run (every 37th step and the last two), its size and time."""
    path = folder / "long.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = loop(store, steps)
        begin = time.perf_counter()
        while run.status == "running":
            run.step()
        whole = time.perf_counter() - begin
        loads = cold_loads(run.history(), 37)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"whole": whole, "bytes": size_of(path), **figures(loads)}


def langgraph_run(folder: Path, steps: int) -> dict[str, Any] | None:
    try:
        import operator
        from typing import Annotated, TypedDict

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END as LG_END
        from langgraph.graph import StateGraph as LGStateGraph
    except ImportError:
        return None

    # The functional form: annotations evaluated now, not as strings (future import).
    loop_state = TypedDict(  # type: ignore[misc]  # noqa: UP013
        "loop_state", {"count": int, "messages": Annotated[list[str], operator.add]}
    )

    path = folder / "langgraph.sqlite3"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    g = LGStateGraph(loop_state)
    g.add_node("agent", lambda s: {"count": s["count"] + 1, "messages": [MESSAGE]})
    g.set_entry_point("agent")
    g.add_conditional_edges("agent", lambda s: "agent" if s["count"] < steps else LG_END)
    config = {"configurable": {"thread_id": "loop"}, "recursion_limit": steps + 10}
    times = []
    begin = time.perf_counter()
    # One step per call, as run.step() does: interrupt after every node, then resume.
    app = g.compile(checkpointer=saver, interrupt_after=["agent"])
    app.invoke({"count": 0, "messages": []}, config, durability="sync")
    while app.get_state(config).next:
        t = time.perf_counter()
        app.invoke(None, config, durability="sync")
        times.append(time.perf_counter() - t)
    whole = time.perf_counter() - begin
    assert app.get_state(config).values["count"] == steps
    conn.close()
    return {
        "first": statistics.median(times[:WINDOW]) * 1e6,
        "last": statistics.median(times[-WINDOW:]) * 1e6,
        "whole": whole,
        "history": None,
        "load": None,
        "bytes": size_of(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--long", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = agentnb_run(Path(tmp), args.steps)
        longer = long_run(Path(tmp), args.long) if args.long else None
        theirs = langgraph_run(Path(tmp), args.steps)
    print(f"{args.steps} steps, one 200-byte message appended per step, run.step() each")
    print(f"{'':28}{'agentnb':>14}{'LangGraph':>14}")

    def row(label: str, key: str, fmt: str) -> None:
        other = "-" if theirs is None or theirs[key] is None else format(theirs[key], fmt)
        print(f"{label:28}{format(ours[key], fmt):>14}{other:>14}")

    row("µs/step, first 100 (median)", "first", ".0f")
    row("µs/step, last 100 (median)", "last", ".0f")
    print(f"{'  growth last/first':28}{ours['last'] / ours['first']:>13.2f}x", end="")
    print(f"{theirs['last'] / theirs['first']:>13.2f}x" if theirs else f"{'-':>14}")
    row("whole run, s", "whole", ".2f")
    row("history() listing, ms", "history", ".1f")
    row("checkpoint load, median ms", "load", ".2f")
    print(f"{'database, MiB':28}{ours['bytes'] / 2**20:>14.2f}", end="")
    print(f"{theirs['bytes'] / 2**20:>14.2f}" if theirs else f"{'-':>14}")
    if theirs:
        print(f"whole run vs LangGraph: {ours['whole'] / theirs['whole']:.2f}x (goal ≤ 0.2x)")
    print(f"step growth: {ours['last'] / ours['first']:.2f}x (goal ≤ 1.3x)")
    print(f"database: {ours['bytes'] / 2**20:.2f} MiB (goal ≤ 3 MiB)")
    print(
        f"prune of the run: {ours['prune']:.2f} s, file {ours['bytes'] / 2**20:.1f} → "
        f"{ours['after_prune'] / 2**20:.2f} MiB"
    )
    print(f"history listing: {ours['history']:.1f} ms (goal ≤ 50 ms)")

    def loads(found: dict[str, Any]) -> str:
        return (
            f"median {found['load']:.2f} ms, p99 {found['load_p99']:.2f} ms, worst "
            f"{found['load_max']:.2f} ms; CPU time median {found['cpu']:.2f} ms, worst "
            f"{found['cpu_max']:.2f} ms, {found['cpu_max_alone']:.2f} ms leaving out the "
            f"{found['full_gcs']} loads a full garbage collection of the process ran in"
        )

    print(
        f"one checkpoint load, each of the {ours['loaded']} steps once: {loads(ours)} (goal ≤ 5 ms)"
    )
    if longer:
        print(
            f"{args.long} steps: run {longer['whole']:.2f} s, {longer['bytes'] / 2**20:.1f} MiB; "
            f"one checkpoint load, {longer['loaded']} steps across the run: {loads(longer)}"
        )


if __name__ == "__main__":
    main()
