"""Widget benchmark: events per second reaching a RunView, and the update rate it used.

Run with ``python bench/bench_widget.py``. A one-node workflow loops 1,000 (then 10,000)
times as fast as the runtime goes, checkpointing to SQLite; a RunView watches it with a
recording comm in place of the browser. Measured in this run, on this machine:

* the run alone (no view): events per second the runtime commits — the floor;
* the run pressed from the view's Run button (driven on the event loop), and the run
  driven by code in another thread (``run.run()`` in a cell), each with the view open:
  run time, events delivered to the view per second (until the last one arrived), live
  log messages and trait updates per second, the largest batch, and the delay between
  the run's end and the last event reaching the view.

Targets: every event delivered exactly once; ≤ 10 updates/s (the view's ``max_rate``);
the run with a view open ≤ 1.5x the time of the run alone.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import END, SqliteCheckpointer, StateGraph, Workflow
from agentnb.widgets import RunView

SIZES = (1_000, 10_000)
MAX_RATE = 10.0
REPEATS = 3


def ticker(store: SqliteCheckpointer, steps: int) -> Workflow:
    g = StateGraph("ticker")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("tick")
    g.add_conditional_edge(
        "tick", lambda s: "again" if s["n"] < steps else "done", {"again": "tick", "done": END}
    )
    return g.compile(store, max_steps=steps + 1)


@dataclass
class Result:
    run_s: float
    delivered_s: float
    events: int
    delivered: int
    live_messages: int
    trait_updates: int
    largest_batch: int
    min_gap_ms: float
    """Shortest time between two consecutive messages to the view (live log or traits)."""

    @property
    def events_per_s(self) -> float:
        return self.delivered / self.delivered_s

    @property
    def max_rate(self) -> float:
        """The highest update rate used: 1 / the shortest gap between two updates."""
        return 1000 / self.min_gap_ms if self.min_gap_ms else 0.0


async def until(condition: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the view never caught up")
        await asyncio.sleep(0.01)


async def alone(folder: Path, steps: int, tag: str) -> float:
    with SqliteCheckpointer(folder / f"alone-{tag}.sqlite3") as store:
        run = ticker(store, steps).start({"n": 0})
        t = time.perf_counter()
        await run.arun()
        return time.perf_counter() - t


async def watched(folder: Path, steps: int, tag: str, how: str) -> Result:
    with SqliteCheckpointer(folder / f"{how}-{tag}.sqlite3") as store:
        run = ticker(store, steps).start({"n": 0})
        view = RunView(run, max_rate=MAX_RATE)
        sent: list[dict[str, Any]] = []
        times: list[float] = []

        def record(data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
            sent.append(data)
            times.append(time.perf_counter())

        view.comm.send = record
        view._on_msg(view, {"kind": "hello", "view": "bench"}, [])
        await until(lambda: any(m.get("method") == "custom" for m in sent))
        before = len(sent)
        t = time.perf_counter()
        if how == "button":
            view._on_msg(view, {"kind": "run"}, [])
            assert view._controls.task is not None
            await view._controls.task  # the drive the button started: the run's own end
        else:
            await asyncio.to_thread(run.run)
        run_s = time.perf_counter() - t
        total = len(run.events)
        await until(lambda: view._seq == total and view.events_sent >= total - 1)
        delivered_s = time.perf_counter() - t
        view.close()
    live = [
        m["content"]
        for m in sent[before:]
        if m.get("method") == "custom" and m["content"].get("kind") == "events"
    ]
    # A refresh sends a trait update and a log batch back to back: one update, two messages.
    starts = [times[before]]
    for t_prev, t_next in zip(times[before:], times[before + 1 :], strict=False):
        if t_next - t_prev > 0.02:
            starts.append(t_next)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    return Result(
        run_s=run_s,
        delivered_s=delivered_s,
        events=total,
        delivered=sum(len(m["events"]) for m in live) + 1,  # + run_started, from the replay
        live_messages=len(live),
        trait_updates=sum(1 for m in sent[before:] if m.get("method") == "update"),
        largest_batch=max(len(m["events"]) for m in live),
        min_gap_ms=min(gaps) * 1000 if gaps else 0.0,
    )


async def bench() -> None:
    print(
        f"agentnb widget benchmark — ticker workflow on SQLite {sqlite3.sqlite_version}, "
        f"max_rate {MAX_RATE:g}/s, median of {REPEATS}, Python {sys.version.split()[0]}"
    )
    head = (
        f"{'steps':>6} {'driven by':<10}{'run s':>7}{'vs alone':>9}{'events':>8}"
        f"{'ev/s to view':>13}{'log msgs':>9}{'trait msgs':>11}{'max upd/s':>10}"
        f"{'batch max':>10}{'catch-up ms':>12}  met"
    )
    print(head)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for steps in SIZES:
            base = statistics.median(
                [await alone(folder, steps, f"{steps}-{i}") for i in range(REPEATS)]
            )
            print(
                f"{steps:>6} {'nothing':<10}{base:>7.2f}{'':>9}{2 * steps + 2:>8}"
                f"{(2 * steps + 2) / base:>13,.0f}"
            )
            for how in ("button", "code"):
                results = [
                    await watched(folder, steps, f"{steps}-{i}", how) for i in range(REPEATS)
                ]
                r = sorted(results, key=lambda x: x.run_s)[REPEATS // 2]
                ok = (
                    r.delivered == r.events
                    and r.max_rate <= MAX_RATE * 1.05  # timer jitter
                    and r.run_s <= 1.5 * base
                )
                print(
                    f"{steps:>6} {how:<10}{r.run_s:>7.2f}{r.run_s / base:>8.2f}x{r.events:>8}"
                    f"{r.events_per_s:>13,.0f}{r.live_messages:>9}{r.trait_updates:>11}"
                    f"{r.max_rate:>10.1f}{r.largest_batch:>10}"
                    f"{(r.delivered_s - r.run_s) * 1000:>12.0f}  {'yes' if ok else 'NO'}"
                )


if __name__ == "__main__":
    asyncio.run(bench())
