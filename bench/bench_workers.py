"""Worker throughput: 1, 2, 4 and 8 ``agentnb worker`` processes on one store.

For each backend (SQLite file; PostgreSQL: a throwaway server started here, or ``--db``),
each per-worker ``--concurrency`` and each worker count, a fresh database gets ``--runs``
queued runs (``workflow.submit``) of a workflow whose two nodes each await ``--node-ms``
(I/O an agent waits on: a model, an API); then that many ``agentnb worker --until-idle``
processes drain it. Every figure is measured in this run:

* **runs/s** while all the workers were at work: from the moment the last of them started
  its first node to the moment the first of them finished its last (process start-up and
  the tail where some have run dry are not throughput); *drain s* is the whole drain, from
  the first node started to the last run completed;
* **speed-up** over one worker and **vs linear** = speed-up / workers (goal: ≥ 0.7 to 8);
* **CPU ms/run**: the workers' CPU (user + system, start-up subtracted: a worker on an empty
  queue, measured here) and, for a server started here, PostgreSQL's (the postmaster and
  every backend) per run;
* **CPU cap**: cores ÷ the CPU a run costs (workers + server) — the runs/s no number of
  workers can pass on this machine, wherever the claims stand.

Each of the runs must be executed exactly once: every node writes a line to a ledger
outside the store when it runs, and the bench checks that each run's two nodes ran once,
that every run completed, and that the workers' claims add up to the runs — or it stops.

**Which table answers the goal** (#14: "claiming work does not serialize workers"): the
one at ``--concurrency 1``. One worker there drives one run at a time, a few percent of
one core, so eight of them together stay far below the CPU cap: what is left to stop them
scaling is the store — the claims, SQLite's write lock, PostgreSQL's row locks and
wake-ups — which is what the goal is about. The table at ``--concurrency 8`` is kept to
show the other limit: 8 workers × 8 runs in flight need more CPU than 2 cores have, and
runs/s stops at the CPU cap (with fewer cores than workers, more workers cannot help).

Usage: ``python bench/bench_workers.py [--backend sqlite,postgres] [--db PATH|URL]
[--runs 2000] [--workers 1,2,4,8] [--concurrency 1,8] [--node-ms 20]``. With ``--db`` the
one database given is emptied of runs before each count (and the server's CPU is not
measured); without, each count gets a new SQLite file or a new database on the throwaway
PostgreSQL server.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import Checkpointer, SqliteCheckpointer, StateGraph, Workflow

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

NODE_SECONDS = float(os.environ.get("AGENTNB_BENCH_NODE_MS", "20")) / 1000
LEDGER = os.environ.get("AGENTNB_BENCH_LEDGER")
_ledger: list[int] = []  # this process's ledger file, opened on first use


def _record(run_id: str, node: str, started: float) -> None:
    """One line per node execution, outside the store (O_APPEND: one write per line)."""
    if LEDGER is None:
        return
    if not _ledger:
        path = Path(LEDGER) / f"{os.getpid()}.log"
        _ledger.append(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
    line = f"{os.getpid()} {run_id} {node} {started:.6f} {time.time():.6f}\n"
    os.write(_ledger[0], line.encode())


async def _wait(state: dict[str, Any], ctx: Any) -> dict[str, Any]:
    started = time.time()
    await asyncio.sleep(NODE_SECONDS)
    _record(ctx.run_id, ctx.node, started)
    return {"n": state.get("n", 0) + 1}


def build(store: Checkpointer) -> Workflow:
    """The benchmark's workflow (``--workflow bench_workers:build``)."""
    g = StateGraph("bench_workers").add_node("fetch", _wait).add_node("answer", _wait)
    return g.set_entry_point("fetch").add_edge("fetch", "answer").compile(store)


def open_store(db: str) -> Checkpointer:
    if db.startswith(("postgresql://", "postgres://")):
        from agentnb import PostgresCheckpointer

        store: Checkpointer = PostgresCheckpointer(db)
        return store
    return SqliteCheckpointer(db)


# -- where the databases are -----------------------------------------------------------


@dataclass
class Place:
    """A backend to bench: a fresh database per count, and the server's CPU if known."""

    name: str
    fresh: Callable[[str], str]
    server_cpu: Callable[[], float | None]
    settle: Callable[[str], None]  # wait until the workers' server sessions have ended


def _proc_cpu(pid: int, children: bool) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime are fields 14-17 (1-based); [0] here is field 3
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / os.sysconf("SC_CLK_TCK")


def _server_cpu(postmaster: int) -> float:
    """The postmaster's CPU, its exited children's (backends it reaped) and its live ones'."""
    total = _proc_cpu(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == postmaster:
                    total += _proc_cpu(int(entry.name), children=False)
    return total


@contextlib.contextmanager
def sqlite_place(db: str | None) -> Iterator[Place]:
    with tempfile.TemporaryDirectory() as tmp:

        def fresh(tag: str) -> str:
            if db is not None:
                return _emptied(db)
            return str(Path(tmp) / f"workers-{tag}.sqlite3")

        yield Place("SQLite", fresh, lambda: None, lambda _: None)


@contextlib.contextmanager
def postgres_place(db: str | None) -> Iterator[Place]:
    if db is not None:
        yield Place("PostgreSQL", lambda _: _emptied(db), lambda: None, lambda _: None)
        return
    import psycopg

    from agentnb.testing import ThrowawayPostgres

    with ThrowawayPostgres() as server:
        postmaster = int((server.data / "postmaster.pid").read_text().split()[0])

        def fresh(tag: str) -> str:
            name = f"bench_{tag}"
            with psycopg.connect(server.dsn(), autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
                conn.execute(f"CREATE DATABASE {name}")
            return server.dsn(name)

        def settle(dsn: str) -> None:
            # A worker's backend ends a moment after the worker: wait for it (its CPU is
            # then the postmaster's children's), with a deadline.
            name = dsn.rsplit("/", 1)[1]
            deadline = time.monotonic() + 30
            with psycopg.connect(server.dsn(), autocommit=True) as conn:
                while time.monotonic() < deadline:
                    [[left]] = conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                        "AND pid <> pg_backend_pid()",
                        (name,),
                    ).fetchall()
                    if left <= 1:  # the bench's own store
                        return
                    time.sleep(0.01)
            raise SystemExit(f"the workers' sessions on {name} did not end in 30 s")

        yield Place("PostgreSQL", fresh, lambda: _server_cpu(postmaster), settle)


def _emptied(db: str) -> str:
    with open_store(db) as store:
        for record in store.list_runs():
            store.delete_run(record.run_id, include_audit=True)
    return db


# -- one count -------------------------------------------------------------------------


@dataclass
class Count:
    drain: float
    rate: float
    worker_cpu: float  # seconds per run
    server_cpu: float | None


def _command(db: str, concurrency: int) -> list[str]:
    command = [sys.executable, "-m", "agentnb", "worker", "--db", db, "--until-idle"]
    return [*command, "--workflow", "bench_workers:build", "--concurrency", str(concurrency)]


def _env(node_ms: float, ledger: str | None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    env["AGENTNB_BENCH_NODE_MS"] = str(node_ms)
    env.pop("AGENTNB_BENCH_LEDGER", None)
    if ledger is not None:
        env["AGENTNB_BENCH_LEDGER"] = ledger
    return env


def _workers(db: str, workers: int, concurrency: int, env: dict[str, str]) -> tuple[int, int]:
    """Run ``workers`` processes to idle; their claims and completions, summed."""
    procs = [
        subprocess.Popen(
            _command(db, concurrency), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(workers)
    ]
    claimed = completed = 0
    for proc in procs:
        out, err = proc.communicate(timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"a worker failed ({proc.returncode}): {err.decode()}")
        found = re.search(rb"stopped: (\d+) claimed, (\d+) completed", out)
        if found is None:
            raise SystemExit(f"a worker said no counts: {out.decode()}")
        claimed, completed = claimed + int(found[1]), completed + int(found[2])
    return claimed, completed


def startup_cpu(place: Place, node_ms: float) -> float:
    """CPU seconds of one worker that starts, finds an empty queue and exits (median of 3)."""
    db = place.fresh("empty")
    with open_store(db):
        pass  # the schema is made here, as for the counts
    samples = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        _workers(db, 1, 1, _env(node_ms, None))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def one_count(
    place: Place,
    tag: str,
    workers: int,
    runs: int,
    concurrency: int,
    node_ms: float,
    startup: float,
) -> Count:
    db = place.fresh(tag)
    with open_store(db) as store, tempfile.TemporaryDirectory() as ledger:
        wf = build(store)
        ids = {wf.submit({"i": i}).run_id for i in range(runs)}
        server_before = place.server_cpu()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        claimed, completed = _workers(db, workers, concurrency, _env(node_ms, ledger))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        place.settle(db)
        server_after = place.server_cpu()
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        worker_cpu = max(0.0, cpu - startup * workers) / runs
        server_cpu = (
            None
            if server_before is None or server_after is None
            else (server_after - server_before) / runs
        )
        # Exactly once: the ledger (outside the store) and the store agree on every run.
        ran: collections.Counter[tuple[str, str]] = collections.Counter()
        by_worker: dict[str, list[float]] = {}
        ends: list[float] = []
        for path in Path(ledger).iterdir():
            for line in path.read_text().splitlines():
                pid, run_id, node, started, ended = line.split()
                ran[run_id, node] += 1
                span = by_worker.setdefault(pid, [float(started), float(ended)])
                span[0], span[1] = min(span[0], float(started)), max(span[1], float(ended))
                if node == "answer":
                    ends.append(float(ended))
        twice = [key for key, n in ran.items() if n != 1]
        missing = {(r, n) for r in ids for n in ("fetch", "answer")} - set(ran)
        statuses = collections.Counter(str(r.status) for r in store.list_runs())
        if twice or missing or statuses != {"completed": runs}:
            raise SystemExit(
                f"not exactly once: {len(twice)} node runs repeated, {len(missing)} missing, "
                f"statuses {dict(statuses)}"
            )
        if (claimed, completed) != (runs, runs):
            raise SystemExit(f"the workers claimed {claimed} and completed {completed} of {runs}")
        if len(by_worker) != workers:
            raise SystemExit(f"{len(by_worker)} of {workers} workers ran a node")
        start = max(span[0] for span in by_worker.values())  # every worker at work
        stop = min(span[1] for span in by_worker.values())  # until the first ran dry
        inside = sum(1 for t in ends if start <= t <= stop)
        if stop <= start or inside < runs // (4 * workers):
            raise SystemExit(f"the workers were at work together for {stop - start:.2f} s only")
        drain = max(ends) - min(span[0] for span in by_worker.values())
        return Count(drain, inside / (stop - start), worker_cpu, server_cpu)


def table(
    place: Place, args: argparse.Namespace, concurrency: int, counts: list[int], startup: float
) -> None:
    cores = os.cpu_count() or 1
    print(
        f"\n{place.name}: {args.runs} runs x 2 nodes awaiting {args.node_ms:g} ms; "
        f"--concurrency {concurrency} per worker; {cores} CPUs; "
        f"worker start-up {startup * 1000:.0f} ms CPU (subtracted)"
    )
    print(
        f"{'workers':>7} {'drain s':>8} {'runs/s':>8} {'speed-up':>9} {'vs linear':>10} "
        f"{'worker CPU':>11} {'server CPU':>11} {'CPU cap':>8}"
    )
    one: float | None = None  # runs/s of one worker (the first count, scaled to one)
    for n in counts:
        tag = f"{place.name.lower()}_c{concurrency}_w{n}"
        got = one_count(place, tag, n, args.runs, concurrency, args.node_ms, startup)
        one = one if one is not None else got.rate / n
        speedup = got.rate / one
        per_run = got.worker_cpu + (got.server_cpu or 0.0)
        cap = cores / per_run if per_run else float("inf")
        server = "n/a" if got.server_cpu is None else f"{got.server_cpu * 1000:.2f} ms"
        print(
            f"{n:>7} {got.drain:>8.2f} {got.rate:>8.0f} {speedup:>8.2f}x {speedup / n:>9.2f}x "
            f"{got.worker_cpu * 1000:>8.2f} ms {server:>11} {cap:>8.0f}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--db", help="a SQLite path or a postgresql:// URL (default: fresh ones)")
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--concurrency", default="1,8", help="runs each worker drives at once")
    parser.add_argument("--node-ms", type=float, default=20.0)
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    backends = args.backend.split(",")
    if args.db is not None:
        backends = ["postgres" if args.db.startswith(("postgresql:", "postgres:")) else "sqlite"]
    for backend in backends:
        opener = {"sqlite": sqlite_place, "postgres": postgres_place}[backend]
        with opener(args.db) as place:
            startup = startup_cpu(place, args.node_ms)
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                table(place, args, concurrency, counts, startup)
    print(
        "\nruns/s: while every worker was at work. vs linear = speed-up / workers, measured "
        "in this run (goal >= 0.7 to 8 workers, read at --concurrency 1). CPU: per run, "
        "worker start-up subtracted; server: PostgreSQL's processes (n/a: not ours to "
        "measure). CPU cap = cores / (worker + server CPU per run): the runs/s this machine "
        "cannot pass, however many workers"
    )


if __name__ == "__main__":
    main()
