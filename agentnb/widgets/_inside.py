"""``Inside``: what runs inside the subgraph nodes a run has lit, for the panel to light too.

A subgraph node runs as a child run of its own (``run.children()``); the panel draws the
subgraph's nodes inside the node's cluster, named ``<node>/<inner node>``. While a subgraph
node is lit (running, next, pending), the child run's own overlay is folded from its events
(incrementally, one :class:`~agentnb.widgets._log.RunLog` per child) and named as drawn, so
the inner node that runs is lit — and a folded cluster's node is lit for it.
"""

from __future__ import annotations

from typing import Any

from agentnb.graph.builder import END
from agentnb.graph.run import Run
from agentnb.render.model import START_ID
from agentnb.widgets._log import RunLog

__all__ = ["DEPTH", "Inside"]

DEPTH = 3
"""Levels of nested subgraphs followed."""


class Inside:
    """The lit insides of ``run``'s subgraph nodes (the relay thread only)."""

    def __init__(self, run: Run, prefix: str = "", depth: int = DEPTH) -> None:
        self.run, self.prefix, self.depth = run, prefix, depth
        self._logs: dict[str, RunLog] = {}
        self._nested: dict[str, Inside] = {}
        self.subgraphs = {n for n, spec in run.workflow.nodes.items() if spec.subgraph is not None}

    def payload(self, overlay: dict[str, Any]) -> dict[str, list[Any]]:
        """``visited``, ``current``, ``pending``, ``failed`` and ``traversed`` inside, as drawn.

        Args:
            overlay: the run's own overlay payload (which nodes are lit).
        """
        lit = {overlay.get("current"), overlay.get("running"), overlay.get("pending")}
        lit |= set(overlay.get("active") or ())
        lit &= self.subgraphs
        found: dict[str, list[Any]] = {
            "visited": [],
            "current": [],
            "pending": [],
            "failed": [],
            "traversed": [],
        }
        if not lit or self.depth <= 0:
            self._logs.clear()
            self._nested.clear()
            return found
        latest: dict[str, Run] = {}
        parent = f"{self.run.run_id}/"
        for child in self.run.children():  # oldest first: the last one per node wins
            node = child.run_id[len(parent) :].rpartition("@")[0].partition("[")[0]
            if node in lit:
                latest[node] = child
        for node, child in latest.items():
            self._merge(found, f"{self.prefix}{node}", child)
        shown = {c.run_id for c in latest.values()}  # forget the children no longer lit
        self._logs = {k: v for k, v in self._logs.items() if k in shown}
        self._nested = {k: v for k, v in self._nested.items() if k in shown}
        return found

    def _merge(self, found: dict[str, list[Any]], name: str, child: Run) -> None:
        log = self._logs.get(child.run_id)
        if log is None:
            store = child.workflow.checkpointer
            log = self._logs[child.run_id] = RunLog(store, child.run_id, child.workflow)
        for _ in log.read(child.record.seq):
            pass  # folded page by page; nothing else is kept
        inner = log.fold.overlay()

        def named(n: str | None) -> str | None:
            return None if n is None or n == END else f"{name}/{n}"

        found["visited"] += [named(n) for n in inner.visited]
        if inner.status in ("running", "approved", "pending"):
            found["current"] += [x for x in (named(inner.current), *map(named, inner.active)) if x]
        if inner.pending:
            found["pending"].append(named(inner.pending))
        if inner.failed:
            found["failed"].append(named(inner.failed))
        for s, t, count in inner.traversed:
            source = name if s == START_ID else named(s)
            target = named(t)
            if source and target:
                found["traversed"].append([source, target, count])
        deeper = self._nested.get(child.run_id)
        if deeper is None:
            deeper = self._nested[child.run_id] = Inside(child, f"{name}/", self.depth - 1)
        more = deeper.payload(
            {
                "current": inner.current,
                "pending": inner.pending,
                "active": list(inner.active),
                "running": None,
            }
        )
        for key, values in more.items():
            found[key] += values
