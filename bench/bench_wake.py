"""Wake-up benchmark: how soon a live panel on PostgreSQL shows another connection's step.

Run with ``python bench/bench_wake.py``. It starts a throwaway server the way the tests do
(agentnb.testing.ThrowawayPostgres) and, in this run, measures:

* the delay between a step committed through another store (another kernel, a worker)
  and a RunView showing it, for a panel woken by ``NOTIFY`` (``poll_interval`` 60 s, so
  polling never finds it) beside the same panel polling every 0.5 s (the default, with
  announcements turned off) — the figure NOTIFY exists for;
* the cost of a step of a watched run (its commit sends ``NOTIFY``) beside a step of a
  run nobody watches (its ``BEGIN`` only probes the watch lock), paired in this run.

Steps are spaced 0.15 s apart plus a random part, so they land anywhere in a poll's
period and never inside the panel's coalescing window (0.1 s at ``max_rate=10``).

Goal: the NOTIFY panel's median delay ≤ a tenth of the polling panel's; a watched step
≤ 1.2x an unwatched one.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg

import agentnb.widgets._live as live
from agentnb import END, PostgresCheckpointer, StateGraph, Workflow
from agentnb.store.watch import UNWATCHED
from agentnb.testing import ThrowawayPostgres
from agentnb.widgets import RunView

STEPS = 25
CHAIN = 60  # nodes of the chain whose steps are timed for the cost of announcing
SPACING = 0.15


def chain(store: PostgresCheckpointer, nodes: int) -> Workflow:
    g = StateGraph("wake")
    names = [f"n{i}" for i in range(nodes)]
    for name in names:
        g.add_node(name, lambda s, name=name: {"at": name})
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(store, max_steps=nodes + 1)


@contextmanager
def announcements_off() -> Iterator[None]:
    """Panels made meanwhile are not watched: they poll, as on SQLite."""
    real = live.watch
    live.watch = lambda store, key, wake: UNWATCHED
    try:
        yield
    finally:
        live.watch = real


async def delays(dsn: str, poll_interval: float) -> list[float]:
    """Seconds from a step's commit (through another store) to the panel showing it."""
    with PostgresCheckpointer(dsn) as mine, PostgresCheckpointer(dsn) as other:
        run = chain(mine, STEPS + 1).start({})
        view = RunView(run, poll_interval=poll_interval)
        view._relay.polling = True  # as while a browser view is open
        view._relay.wake()  # so that its next wait is a poll
        deadline = time.monotonic() + 30
        while poll_interval > 1 and not view._relay.announced():
            assert time.monotonic() < deadline, "the watch never became live"
            await asyncio.sleep(0.005)
        workflow = chain(other, STEPS + 1)
        committed: dict[int, float] = {}  # step -> when its commit returned (its events)
        workflow.subscribe(lambda e: committed.setdefault(e.step, time.perf_counter()))
        theirs = workflow.attach(run.run_id)
        found = []
        for n in range(1, STEPS + 1):
            await asyncio.sleep(SPACING + random.random() * 0.5)
            stepping = asyncio.ensure_future(asyncio.to_thread(theirs.step))
            while view.step != n:
                await asyncio.sleep(0.0002)
            seen = time.perf_counter()
            await stepping
            found.append(max(0.0, seen - committed[n]))
        view.close()
        return found


def step_costs(dsn: str) -> tuple[float, float]:
    """Median µs per step of a run nobody watches and of a watched one, interleaved.

    A watched step announces two of its three transactions (the step's commit and the
    lease given back; taking the lease changes nothing a panel shows)."""
    with PostgresCheckpointer(dsn) as store:
        workflow = chain(store, CHAIN)
        plain, watched = [], []
        for _ in range(15):
            for target in (plain, watched):
                run = workflow.start({})
                watch = store.watch(run.run_id, lambda: None) if target is watched else None
                deadline = time.monotonic() + 30
                while watch is not None and not watch.live:
                    assert time.monotonic() < deadline, "the watch never became live"
                    time.sleep(0.001)
                t = time.perf_counter()
                for _ in range(CHAIN):
                    run.step()
                target.append((time.perf_counter() - t) / CHAIN * 1e6)
                if watch is not None:
                    watch.close()
        return statistics.median(plain), statistics.median(watched)


def schema(cluster: ThrowawayPostgres, name: str) -> str:
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return cluster.dsn(options=f"-csearch_path%3D{name}")


def summary(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered),
        "p90": ordered[int(len(ordered) * 0.9) - 1],
        "max": ordered[-1],
    }


def main() -> None:
    random.seed(14)
    cluster = ThrowawayPostgres()
    try:
        notified = asyncio.run(delays(schema(cluster, "wake_notify"), poll_interval=60.0))
        with announcements_off():
            polled = asyncio.run(delays(schema(cluster, "wake_poll"), poll_interval=0.5))
        plain, watched = step_costs(schema(cluster, "wake_cost"))
    finally:
        cluster.remove()
    n, p = summary(notified), summary(polled)
    print(f"PostgreSQL {cluster.bindir.parent.name}: a step by another store, {STEPS} steps")
    print(f"  {'panel woken by':<28} {'median':>9} {'p90':>9} {'max':>9}")
    for name, s in (("NOTIFY (poll 60 s)", n), ("polling every 0.5 s", p)):
        print(
            f"  {name:<28} {s['median'] * 1e3:7.1f}ms {s['p90'] * 1e3:7.1f}ms "
            f"{s['max'] * 1e3:7.1f}ms"
        )
    ratio = n["median"] / p["median"]
    goal = "ok" if ratio <= 0.1 else "over the goal"
    print(f"  NOTIFY's median delay / polling's: {ratio:.3f}  (goal <= 0.1: {goal})")
    cost = watched / plain
    goal = "ok" if cost <= 1.2 else "over the goal"
    print(
        f"  a step: nobody watching {plain:.0f}µs, watched (NOTIFY) {watched:.0f}µs "
        f"= {cost:.2f}x  (goal <= 1.2x: {goal})"
    )


if __name__ == "__main__":
    main()
