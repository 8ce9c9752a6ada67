"""Counting a graph's events into series: dictionaries folded in batches, off the hot path.

A workflow's listener only queues each event; :meth:`GraphSeries.fold` adds a batch of them
to plain counts and histograms, and :meth:`GraphSeries.snapshot` hands them to a scrape.
prometheus_client is not needed here.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentnb.graph.builder import START
from agentnb.store.records import Event, EventType

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow

__all__ = ["DURATION_BUCKETS", "RUN_ENDS", "WAIT_BUCKETS", "GraphSeries"]

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
"""Upper bounds (seconds) of node and state durations: from tool calls to slow LLM calls."""
WAIT_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400)
"""Upper bounds (seconds) of approval waits: a person, from seconds to a day."""

RUN_ENDS = frozenset({"completed", "rejected", "failed", "cancelled"})
_NODE_START, _STATE_UPDATE = str(EventType.NODE_START), str(EventType.STATE_UPDATE)
_INTERRUPTED = str(EventType.INTERRUPTED)
_PER_NODE = {str(EventType.RETRY): "retries", str(EventType.TIMEOUT): "timeouts"}
_BATCH = 256


class GraphSeries:
    """The series of one graph (or state machine); ``on_event`` is its workflows' listener.

    Counters are ``counts[(family, *labels)]``; histograms are ``hists[(family, label)]``,
    a list: a count per bucket (not cumulative, the last is +Inf), then the sum. Labels are
    made strings when scraped, not on the hot path.
    """

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = {"node_duration_seconds": buckets, "state_duration_seconds": buckets}
        self.bounds["approval_wait_seconds"] = WAIT_BUCKETS
        self.lock = threading.Lock()
        self.watched = False  # a workflow reports here (not only a state machine)
        self.counts: dict[tuple[Any, ...], int] = {}  # label values are str
        self.hists: dict[tuple[str, Any], list[float]] = {}
        self.pending: set[str] = set()
        self.paused_at: dict[str, tuple[str, float]] = {}  # run -> (node, at)
        self.started: dict[str, tuple[str | None, float]] = {}  # run -> (node, at)
        self.inbox: list[Event] = []

    def on_event(self, event: Event) -> None:
        # Runs in the worker's thread for every event: only queue it, and fold the queue
        # in batches (list append and slice deletion are atomic).
        inbox = self.inbox
        inbox.append(event)
        if len(inbox) >= _BATCH:
            self.fold()

    def fold(self) -> None:
        with self.lock:
            inbox = self.inbox
            batch = inbox[: len(inbox)]
            del inbox[: len(batch)]
            pending, started, counts = self.pending, self.started, self.counts
            hists, bounds = self.hists, self.bounds["node_duration_seconds"]
            for event in batch:  # the two events of every step inline, the rest in _rare
                kind, run_id = event.type, event.run_id
                if pending and kind != _INTERRUPTED:
                    pending.discard(run_id)  # any later event means the run moved on
                if kind == _NODE_START:
                    started[run_id] = (event.node, event.at)
                elif kind == _STATE_UPDATE:
                    node = event.node
                    key = ("state_changes", node, event.payload.get("next"))
                    counts[key] = counts.get(key, 0) + 1
                    begun = started.pop(run_id, None)
                    if begun is not None and begun[0] == node:
                        took = event.at - begun[1]
                        hist = hists.get(("node_duration_seconds", node))
                        if hist is None:
                            hist = self._hist("node_duration_seconds", node)
                        hist[bisect.bisect_left(bounds, took)] += 1
                        hist[-1] += took if took > 0 else 0.0
                else:
                    self._rare(kind, event)

    def _rare(self, kind: str, event: Event) -> None:
        node, run_id = event.node or "", event.run_id
        key: tuple[str, ...] | None = None
        if kind in _PER_NODE:
            key = (_PER_NODE[kind], node)
        elif kind == EventType.BREAKER_OPEN:
            key = ("breaker_refused", node, str(event.payload.get("breaker")))
        elif kind == EventType.RUN_STARTED:
            key = ("state_changes", START, node)
        elif kind == _INTERRUPTED:
            self.pending.add(run_id)
            self.paused_at[run_id] = (node, event.at)
        elif kind in (EventType.APPROVED, EventType.REJECTED):
            paused = self.paused_at.pop(run_id, None)
            if paused is not None:
                self.observe("approval_wait_seconds", paused[0], event.at - paused[1])
        if kind in RUN_ENDS:  # "rejected" is both a decision and an end
            key = ("runs", kind)
            if kind == EventType.FAILED:
                self._finish_node(run_id, node, event.at)
            self.started.pop(run_id, None)  # a cancelled execution is not observed
        if key is not None:
            self.counts[key] = self.counts.get(key, 0) + 1

    def _finish_node(self, run_id: str, node: str, at: float) -> None:
        started = self.started.pop(run_id, None)
        if started is not None and started[0] == node:
            self.observe("node_duration_seconds", node, at - started[1])

    def _hist(self, family: str, label: str | None) -> list[float]:
        hist = self.hists.get((family, label))
        if hist is None:
            hist = self.hists[family, label] = [0] * (len(self.bounds[family]) + 2)
        return hist

    def observe(self, family: str, label: str, value: float) -> None:
        hist = self._hist(family, label)
        hist[bisect.bisect_left(self.bounds[family], value)] += 1
        hist[-1] += max(0.0, value)

    def transition(self, source: str, target: str, seconds: float | None) -> None:
        self.fold()  # keep events and transitions in order
        with self.lock:
            key = ("state_changes", source, target)
            self.counts[key] = self.counts.get(key, 0) + 1
            if seconds is not None:
                self.observe("state_duration_seconds", source, seconds)

    def declare(self, workflow: Workflow) -> None:
        """Start at 0 the series the workflow's shape makes known."""
        known: list[tuple[str, ...]] = [("runs", status) for status in RUN_ENDS]
        known.append(("state_changes", START, workflow.entry))
        for name, spec in workflow.nodes.items():
            known += [("state_changes", name, nxt) for nxt in workflow.successors(name)]
            if spec.retry is not None and spec.retry.attempts > 1:
                known.append(("retries", name))
            if spec.timeout is not None:
                known.append(("timeouts", name))
            if spec.breaker is not None:
                known.append(("breaker_refused", name, spec.breaker.name))
        paused = [*workflow.interrupts_before]
        paused += [n for a in workflow.interrupts_after for n in workflow.successors(a)]
        with self.lock:
            self.watched = True
            for key in known:
                self.counts.setdefault(key, 0)
            for name in workflow.nodes:
                self._hist("node_duration_seconds", name)
            for name in paused:
                self._hist("approval_wait_seconds", name)

    def snapshot(self, graph: str, out: dict[str, dict[tuple[str, ...], Any]], go: Any) -> None:
        """Add this graph's samples to ``out``: ``{family: {label values: value}}``."""
        self.fold()
        with self.lock:
            for (family, *labels), count in self.counts.items():
                out[family][graph, *map(str, labels)] = count
            if self.watched:
                out["pending_approvals"][graph,] = len(self.pending)
            for (family, label), hist in self.hists.items():
                les = [*map(go, self.bounds[family]), "+Inf"]
                buckets = list(zip(les, itertools.accumulate(hist[:-1]), strict=True))
                out[family][graph, str(label)] = (buckets, hist[-1])
