"""Resilience benchmark: what retry/timeout guards and Prometheus metrics add to a step.

Run with ``python bench/bench_resilience.py`` (``--profile`` adds a cProfile of the guarded
chain). One run of a 200-node in-memory chain (MemoryCheckpointer), timed per step, for:

* (a) nothing: the plain chain;
* (b) metrics: ``agentnb.metrics.instrument(workflow)``, the final fold of queued events
  included in the timing (what a scrape would otherwise do later);
* (c) retry wrappers: every node with ``retry=Retry(...)`` (never retrying);
* (d) metrics and retry wrappers together.

Timeouts are measured too, apart, and have no target: an async node's timeout is an
``asyncio.timeout`` (~3 µs); a sync node's runs the node in a worker thread (~40 µs, the
thread hop) — the price of being able to stop waiting for a blocking call. Against a node
that does a millisecond of I/O either is noise.

Then, to say what costs what in (c), the same chain with one guard at a time, with sync and
async nodes (a sync node with a timeout runs in a worker thread; an async one does not).

Variants run in rounds (in a shuffled order each round), µs/step figures are medians, and
"% added" is the median of each round's ratio to that round's baseline, because the
machine may be busy. Target: each of (b), (c), (d) adds ≤ 10% to (a).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import MemoryCheckpointer, StateGraph, Workflow
from agentnb.metrics import instrument
from agentnb.resilience import Retry

NODES = 200
REPEATS = 61
TARGET = 10.0  # % added per step


def sync_node(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda state: {"count": i, "last": f"n{i}"}


def async_node(i: int) -> Callable[[dict[str, Any]], Any]:
    async def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"count": i, "last": f"n{i}"}

    return node


def chain(*, guard: dict[str, Any] | None = None, is_async: bool = False) -> Workflow:
    """The bench_runtime chain; ``guard`` goes to every add_node (retry=, timeout=)."""
    g = StateGraph("chain")
    for i in range(NODES):
        g.add_node(f"n{i}", (async_node if is_async else sync_node)(i), **(guard or {}))
    g.set_entry_point("n0")
    for i in range(NODES - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    return g.compile(MemoryCheckpointer(), max_steps=NODES + 1)


RETRY = {"retry": Retry(attempts=3, initial=0.01, jitter=0)}
TIMEOUT = {"timeout": 30.0}
BOTH = {**RETRY, **TIMEOUT}


def variant(
    *, guard: dict[str, Any] | None = None, metrics: bool = False, is_async: bool = False
) -> Callable[[], float]:
    """One timed run of a fresh chain: µs per step."""

    def measure() -> float:
        wf = chain(guard=guard, is_async=is_async)
        counted = instrument(wf) if metrics else None
        run = wf.start({"count": 0, "messages": []})
        t = time.perf_counter()
        run.run()
        if counted is not None:
            counted.flush()
        elapsed = time.perf_counter() - t
        assert run.status == "completed"
        if counted is not None:
            counted.close()
        return elapsed / NODES * 1e6

    return measure


def interleaved(variants: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """µs/step samples of each variant, measured in rounds so that load hits all alike."""
    for measure in variants.values():
        measure()  # warm-up: imports (prometheus_client), caches
    samples: dict[str, list[float]] = {name: [] for name in variants}
    order, shuffle = list(variants), random.Random(2024).shuffle
    for _ in range(repeats):
        shuffle(order)  # a run is slower right after a guarded one: no fixed neighbours
        for name in order:
            samples[name].append(variants[name]())
    return samples


def report(title: str, samples: dict[str, list[float]], base: str, *, judged: bool = True) -> None:
    """Median µs/step, and the % added: the median of each round's ratio to ``base``.

    Pairing each sample with the baseline measured just before it cancels most of the drift
    of a shared machine; the medians alone can move by several % from one run to the next.
    """
    print(title)
    for name, values in samples.items():
        ratios = [v / b for v, b in zip(values, samples[base], strict=True)]
        added = (statistics.median(ratios) - 1) * 100
        verdict = ("met" if added <= TARGET else "MISSED") if judged else ""
        mark = "" if name == base else f"{added:+7.1f}%  {verdict}"
        print(f"  {name:<44}{statistics.median(values):9.1f} µs/step  {mark}")


async def primitives(n: int = 2000) -> dict[str, float]:
    """µs per call of what the driver's _guarded/_attempt do around a node that succeeds."""

    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"count": 1}

    async def anode(state: dict[str, Any]) -> dict[str, Any]:
        return {"count": 1}

    async def timed(call: Callable[[], Any]) -> float:
        t = time.perf_counter()
        for _ in range(n):
            await call()
        return (time.perf_counter() - t) / n * 1e6

    async def direct() -> Any:
        return node({})

    async def awaited() -> Any:
        return await anode({})

    async def with_timeout() -> Any:
        async with asyncio.timeout(30.0):
            return await anode({})

    async def in_thread() -> Any:
        return await asyncio.to_thread(node, {})

    async def call_later_timeout() -> Any:  # a sketch: must still tell its cancel from others
        task, loop = asyncio.current_task(), asyncio.get_running_loop()
        assert task is not None
        handle = loop.call_later(30.0, task.cancel)
        try:
            return await anode({})
        finally:
            handle.cancel()

    return {
        "call a sync node": await timed(direct),
        "await an async node": await timed(awaited),
        "  + asyncio.timeout() (async node with timeout)": await timed(with_timeout),
        "  asyncio.to_thread() (sync node with timeout)": await timed(in_thread),
        "  possible: loop.call_later(t, task.cancel) timeout": await timed(call_later_timeout),
    }


def profile(measure: Callable[[], float]) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(5):
        measure()
    profiler.disable()
    stats = pstats.Stats(profiler).strip_dirs().sort_stats("cumulative")
    print("\ncProfile of (c), 5 runs x 200 steps, by cumulative time:")
    stats.print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--profile", action="store_true", help="cProfile the guarded chain")
    args = parser.parse_args()
    print(
        f"agentnb resilience benchmark — {NODES}-node in-memory chain, one run per sample, "
        f"{args.repeats} rounds, Python {sys.version.split()[0]}\n"
    )
    main_results = interleaved(
        {
            "(a) nothing": variant(),
            "(b) metrics": variant(metrics=True),
            "(c) retry wrappers on every node": variant(guard=RETRY),
            "(d) metrics + retry wrappers": variant(guard=RETRY, metrics=True),
        },
        args.repeats,
    )
    report("What each adds per step (target ≤ 10%):", main_results, "(a) nothing")

    parts = interleaved(
        {
            "sync nodes, nothing": variant(),
            "sync nodes, retry only": variant(guard=RETRY),
            "sync nodes, timeout only (worker thread)": variant(guard=TIMEOUT),
            "sync nodes, retry + timeout": variant(guard=BOTH),
            "async nodes, nothing": variant(is_async=True),
            "async nodes, retry only": variant(guard=RETRY, is_async=True),
            "async nodes, timeout only": variant(guard=TIMEOUT, is_async=True),
            "async nodes, retry + timeout": variant(guard=BOTH, is_async=True),
        },
        args.repeats,
    )
    print()
    sync, asynchronous = dict(list(parts.items())[:4]), dict(list(parts.items())[4:])
    report("Each guard alone (no target), sync nodes:", sync, "sync nodes, nothing", judged=False)
    report("… and async nodes:", asynchronous, "async nodes, nothing", judged=False)

    print("\nThe primitives, µs per call (median of 5 loops of 2,000):")
    loops = [asyncio.run(primitives()) for _ in range(5)]
    for name in loops[0]:
        print(f"  {name:<52}{statistics.median(loop[name] for loop in loops):7.1f} µs")
    if args.profile:
        profile(variant(guard=BOTH))


if __name__ == "__main__":
    main()
