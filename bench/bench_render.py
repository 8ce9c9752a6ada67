"""Render benchmark: IR+DOT generation and SVG rendering beside raw ``dot -Tsvg``.

Run with ``python bench/bench_render.py``. For workflow-shaped graphs (layered, branching,
a few loops) and random cyclic graphs (the worst case for ``dot``) of 10, 100 and 500 nodes,
every figure is measured in this run, on the same DOT text:

* IR+DOT: ``diagram_from_graph`` + ``to_dot`` (pure Python);
* render_svg: the whole pipeline (IR, DOT, ``dot`` subprocess, SVG safety check, titles);
* raw dot: ``dot -Tsvg`` as a subprocess on the same DOT with the same flags — the floor.

Targets: render_svg ≤ 1.1x raw dot; IR+DOT ≤ 20 ms at 500 nodes.
(Uncapped, ``dot`` needs minutes for the 500-node random graph; see NOTEBOOK-TESTING.md.)
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb.graph.builder import END, StateGraph
from agentnb.render.dot import to_dot
from agentnb.render.extract import diagram_from_graph
from agentnb.render.svg import BIG_GRAPH, CAPPED, render_svg

SIZES = (10, 100, 500)


def _noop(state: dict[str, object]) -> None:
    return None


def workflow_graph(n: int, seed: int = 1) -> StateGraph:
    """Layered: each node branches to two of the next few, one in twenty loops back."""
    rnd = random.Random(seed)
    names = [f"step_{i}" for i in range(n)]
    g = StateGraph(f"workflow-{n}")
    for name in names:
        g.add_node(name, _noop)
    g.set_entry_point(names[0])
    for i, name in enumerate(names[:-1]):
        ahead = names[i + 1 : i + 6]
        targets = rnd.sample(ahead, min(2, len(ahead)))
        if i > 3 and rnd.random() < 0.05:
            targets.append(names[rnd.randrange(i)])
        g.add_conditional_edge(name, lambda s: "", {f"to {t}": t for t in targets})
    g.add_edge(names[-1], END)
    g.add_interrupt_before(*names[:: max(1, n // 5)])
    return g


def random_graph(n: int, seed: int = 2) -> StateGraph:
    """``n`` nodes and ``2n`` random edges: cycles everywhere."""
    rnd = random.Random(seed)
    names = [f"node_{i}" for i in range(n)]
    g = StateGraph(f"random-{n}")
    for name in names:
        g.add_node(name, _noop)
    g.set_entry_point(names[0])
    for name in names:
        g.add_conditional_edge(name, lambda s: "", rnd.sample(names, 2))
    return g


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def paired_ms(
    ours: Callable[[], object], raw: Callable[[], object], repeats: int
) -> tuple[float, float]:
    """Medians of ``ours`` and ``raw``, run alternately so machine load hits both alike."""
    ours(), raw()  # warm-up
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(repeats):
        pair = (ours, raw) if i % 2 == 0 else (raw, ours)
        for fn in pair:
            t = time.perf_counter()
            fn()
            times[fn is raw].append(time.perf_counter() - t)
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000


def main() -> None:
    dot = shutil.which("dot")
    if dot is None:
        sys.exit("bench_render needs Graphviz: apt-get install graphviz")
    version = subprocess.run([dot, "-V"], capture_output=True, text=True).stderr.strip()
    print(f"{version}; Python {sys.version.split()[0]}")
    header = (
        f"{'graph':<14}{'nodes':>6}{'edges':>7}{'IR+DOT ms':>11}{'render_svg ms':>15}"
        f"{'raw dot ms':>12}{'ratio':>7}"
    )
    print(header)
    print("-" * len(header))
    worst_ratio, dot_ms_500 = 0.0, 0.0
    for make in (workflow_graph, random_graph):
        for n in SIZES:
            graph = make(n)
            diagram = diagram_from_graph(graph)
            size = len(diagram.nodes) + len(diagram.edges)
            text = to_dot(diagram)
            argv = [dot, "-Tsvg", *(CAPPED if size > BIG_GRAPH else ())]
            repeats = 5 if size > BIG_GRAPH else 21
            gen = median_ms(lambda g=graph: to_dot(diagram_from_graph(g)), 31)
            ours, raw = paired_ms(
                lambda g=graph: render_svg(diagram_from_graph(g)),
                lambda t=text, a=argv: subprocess.run(a, input=t.encode(), capture_output=True),
                repeats,
            )
            ratio = ours / raw
            worst_ratio = max(worst_ratio, ratio)
            if n == 500:
                dot_ms_500 = max(dot_ms_500, gen)
            print(
                f"{graph.name:<14}{len(diagram.nodes):>6}{len(diagram.edges):>7}{gen:>11.2f}"
                f"{ours:>15.1f}{raw:>12.1f}{ratio:>7.2f}"
            )
    print()
    print(f"worst render_svg / raw dot: {worst_ratio:.2f}x (target <= 1.1x)")
    print(f"IR+DOT at 500 nodes: {dot_ms_500:.1f} ms (target <= 20 ms)")


if __name__ == "__main__":
    main()
