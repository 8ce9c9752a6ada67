"""Parallel supersteps benchmark: concurrency, and the per-task cost of a Send map-reduce.

Run with ``make bench`` (or ``python bench/bench_parallel.py``). Measured in this run:

* wall time of one superstep of 4 async branches that each await 0.2 s, beside the 0.2 s
  a single branch needs (target: ≤ 0.25 s, i.e. the branches really overlap);
* µs per task of a 100-way ``Send`` map-reduce (split -> 100 x square -> report), in
  memory and with SQLite checkpoints — every task's result is saved on its own — beside
  LangGraph's ``Send`` on the same graph with its in-memory and SQLite savers, in the same
  process (target: ≤ 0.5x LangGraph's per-task cost).
"""

from __future__ import annotations

import asyncio
import operator
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import MemoryCheckpointer, Send, SqliteCheckpointer, StateGraph

WIDTH = 100
REPEATS = 7


def median_of(fn: Callable[[], float], repeats: int = REPEATS) -> float:
    fn()  # warm-up
    return statistics.median(fn() for _ in range(repeats))


def four_branches() -> float:
    async def wait(state: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"done": 1}

    g = StateGraph("four", reducers={"done": operator.add})
    g.add_node("start", lambda s: None)
    for i in range(4):
        g.add_node(f"b{i}", wait)
        g.add_edge("start", f"b{i}")
    run = g.set_entry_point("start").compile().start({"done": 0})
    run.step()
    t = time.perf_counter()
    run.step()  # the superstep of the four branches
    return time.perf_counter() - t


def agentnb_map_reduce(make_store: Callable[[], Any]) -> Callable[[], float]:
    def measure() -> float:
        with make_store() as store:
            g = StateGraph("map", reducers={"total": operator.add})
            g.add_node("split", lambda s: None)
            g.add_node("square", lambda s: {"total": s["n"] * s["n"]})
            g.add_node("report", lambda s: {"done": True})
            g.set_entry_point("split")
            g.add_conditional_edge(
                "split", lambda s: [Send("square", {"n": n}) for n in range(WIDTH)], ["square"]
            )
            g.add_edge("square", "report")
            run = g.compile(store).start({"total": 0})
            t = time.perf_counter()
            run.run()
            elapsed = time.perf_counter() - t
            assert run.state["total"] == sum(n * n for n in range(WIDTH))
        return elapsed / WIDTH * 1e6

    return measure


def langgraph_map_reduce(saver: str, folder: Path) -> Callable[[], float] | None:
    try:
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START
        from langgraph.graph import StateGraph as LangGraph
        from langgraph.types import Send as LangSend
    except ImportError:
        return None

    class State(TypedDict, total=False):
        n: int
        total: Annotated[int, operator.add]
        done: bool

    def build(checkpointer: Any) -> Any:
        g = LangGraph(State)
        g.add_node("split", lambda s: {})
        g.add_node("square", lambda s: {"total": s["n"] * s["n"]})
        g.add_node("report", lambda s: {"done": True})
        g.add_edge(START, "split")
        g.add_conditional_edges(
            "split", lambda s: [LangSend("square", {"n": n}) for n in range(WIDTH)], ["square"]
        )
        g.add_edge("square", "report")
        g.add_edge("report", END)
        return g.compile(checkpointer=checkpointer)

    counter = iter(range(10**9))

    def measure() -> float:
        config = {"configurable": {"thread_id": f"t{next(counter)}"}}
        if saver == "memory":
            graph = build(InMemorySaver())
            t = time.perf_counter()
            out = graph.invoke({"total": 0}, config)
            elapsed = time.perf_counter() - t
        else:
            with SqliteSaver.from_conn_string(str(folder / f"lg{next(counter)}.db")) as cp:
                graph = build(cp)
                t = time.perf_counter()
                out = graph.invoke({"total": 0}, config)
                elapsed = time.perf_counter() - t
        assert out["total"] == sum(n * n for n in range(WIDTH))
        return elapsed / WIDTH * 1e6

    return measure


def main() -> None:
    print(f"agentnb parallel benchmark — median of {REPEATS}, Python {sys.version.split()[0]}")
    wall = median_of(four_branches)
    met = "yes" if wall <= 0.25 else "NO"
    print(f"4 async branches x 0.2 s, one superstep   {wall:.3f} s   (target ≤ 0.25 s)  {met}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        count = iter(range(10**9))
        stores: dict[str, Callable[[], Any]] = {
            "memory": MemoryCheckpointer,
            "sqlite": lambda: SqliteCheckpointer(folder / f"a{next(count)}.sqlite3"),
        }
        for name, make in stores.items():
            ours = median_of(agentnb_map_reduce(make))
            theirs_fn = langgraph_map_reduce(name, folder)
            if theirs_fn is None:
                print(f"{WIDTH}-way Send, {name:6}  {ours:8.1f} µs/task  (langgraph not installed)")
                continue
            theirs = median_of(theirs_fn)
            ratio = ours / theirs
            met = "yes" if ratio <= 0.5 else "NO"
            print(
                f"{WIDTH}-way Send, {name:6}  {ours:8.1f} µs/task   LangGraph {theirs:8.1f} "
                f"µs/task   {ratio:.2f}x  (target ≤ 0.5x)  {met}"
            )


if __name__ == "__main__":
    main()
