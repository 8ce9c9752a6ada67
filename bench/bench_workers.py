"""Worker throughput: 1, 2, 4 and 8 ``agentnb worker`` processes on one store.

For each worker count, a fresh database gets ``--runs`` queued runs (``workflow.submit``)
of a workflow whose two nodes each await ``--node-ms`` (I/O an agent waits on: a model,
an API), then that many ``agentnb worker --until-idle`` processes drain it. Printed,
measured in this run: seconds from the first step committed to the last run completed
(process start-up is left out: it is not throughput), runs/s, the speed-up over one
worker, and the ratio to linear (speed-up / workers; goal ≥ 0.7 to 8 workers).

Usage: ``python bench/bench_workers.py [--db PATH|postgresql://...] [--runs 2000]
[--workers 1,2,4,8] [--concurrency 8] [--node-ms 20]``. With ``--db`` the database is
emptied of runs before each count; without, a temporary SQLite file is used.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import Checkpointer, SqliteCheckpointer, StateGraph, Workflow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

NODE_SECONDS = float(os.environ.get("AGENTNB_BENCH_NODE_MS", "20")) / 1000


async def _wait(state: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(NODE_SECONDS)
    return {"n": state.get("n", 0) + 1}


def build(store: Checkpointer) -> Workflow:
    """The benchmark's workflow (``--workflow bench_workers:build``)."""
    g = StateGraph("bench_workers").add_node("fetch", _wait).add_node("answer", _wait)
    return g.set_entry_point("fetch").add_edge("fetch", "answer").compile(store)


def open_store(db: str) -> Checkpointer:
    if db.startswith(("postgresql://", "postgres://")):
        from agentnb.store.postgres import PostgresCheckpointer  # type: ignore[import-not-found]

        store: Checkpointer = PostgresCheckpointer(db)
        return store
    return SqliteCheckpointer(db)


def one_count(
    db: str, workers: int, runs: int, concurrency: int, node_ms: float
) -> tuple[float, float]:
    """Seconds ``workers`` processes take to drain ``runs`` queued runs, and the CPU
    seconds they used per run (user + system)."""
    with open_store(db) as store:
        for record in store.list_runs():
            store.delete_run(record.run_id, include_audit=True)
        wf = build(store)
        for i in range(runs):
            wf.submit({"i": i})
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
        env["AGENTNB_BENCH_NODE_MS"] = str(node_ms)
        command = [sys.executable, "-m", "agentnb", "worker", "--db", db, "--until-idle"]
        command += ["--workflow", "bench_workers:build", "--concurrency", str(concurrency)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        procs = [
            subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for _ in range(workers)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=3600)
            if proc.returncode != 0:
                raise SystemExit(f"a worker failed: {err.decode()}")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        first = last = None
        done = 0
        for record in store.list_runs():
            events = store.events(record.run_id)
            steps = [e.at for e in events if e.type == "state_update"]
            ends = [e.at for e in events if e.type == "completed"]
            if steps and ends:
                done += 1
                first = min(steps[0], first if first is not None else steps[0])
                last = max(ends[-1], last if last is not None else ends[-1])
        if done != runs or first is None or last is None:
            raise SystemExit(f"{done} of {runs} runs completed")
        # The first commit lands one node after the first claim: count that node too.
        return last - first + node_ms / 1000, cpu / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a SQLite path or a postgresql:// URL (default: temp)")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--concurrency", type=int, default=8, help="runs each worker drives")
    parser.add_argument("--node-ms", type=float, default=20.0)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    print(
        f"{args.runs} runs x 2 nodes awaiting {args.node_ms:g} ms; each worker drives "
        f"{args.concurrency} at once; {os.cpu_count()} CPUs"
    )
    print(
        f"{'workers':>7} {'seconds':>8} {'runs/s':>8} {'speed-up':>9} {'vs linear':>10} "
        f"{'CPU ms/run':>11} {'CPU-bound cap':>14}"
    )
    one: float | None = None  # runs/s of one worker (the first count, scaled to one)
    with tempfile.TemporaryDirectory() as tmp:
        for n in counts:
            db = args.db or str(Path(tmp) / f"workers-{n}.sqlite3")
            seconds, cpu = one_count(db, n, args.runs, args.concurrency, args.node_ms)
            rate = args.runs / seconds
            one = one if one is not None else rate / n
            speedup = rate / one
            cap = (os.cpu_count() or 1) / cpu  # runs/s if the workers had every core
            print(
                f"{n:>7} {seconds:>8.2f} {rate:>8.0f} {speedup:>8.2f}x {speedup / n:>9.2f}x "
                f"{cpu * 1000:>11.2f} {cap:>14.0f}"
            )
    print(
        "vs linear = speed-up / workers, measured in this run. CPU-bound cap = cores / CPU "
        "per run: past it more workers cannot help on this machine (the cores, not the "
        "claims, are the limit)"
    )


if __name__ == "__main__":
    main()
