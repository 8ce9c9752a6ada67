"""``OverlayFold``: a run's events folded into its overlay one event at a time.

:func:`~agentnb.render.extract.overlay_from_events` replays a whole log through it; a live
panel keeps one fold per run and feeds it each new batch, so it never holds the log (a
100,000-event run costs the fold what its graph costs: visited nodes and edge counts).
:meth:`OverlayFold.copy` lets the panel keep a few folds along the way, from which the
overlay at any past step is a short replay.

Example:
    >>> from agentnb.graph.builder import END, StateGraph
    >>> from agentnb.store.records import Event
    >>> g = StateGraph("demo").add_node("a", lambda s: None).add_edge("a", END)
    >>> fold = OverlayFold(g.set_entry_point("a"))
    >>> _ = fold.feed([Event("r", 1, 0, "run_started", None, {}, 0.0)])
    >>> fold.overlay().current
    'a'
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from agentnb.render.model import END_ID, START_ID, Overlay
from agentnb.store.records import Event, EventType

if TYPE_CHECKING:
    from agentnb.graph.builder import StateGraph
    from agentnb.graph.workflow import Workflow

    GraphLike: TypeAlias = StateGraph | Workflow

__all__ = ["OverlayFold"]


class OverlayFold:
    """What a run's events say so far, ready to become an :class:`Overlay` at any time."""

    def __init__(self, graph: GraphLike) -> None:
        self.graph = graph
        self.known = set(graph.nodes) | {END_ID}
        self.joins = list(graph.joins)
        self.status: str | None = None
        self.current: str | None = None
        # A superstep lights several nodes: those running, else those the last one led to.
        self.running: dict[str, None] = {}
        self.upcoming: dict[str, None] = {}
        self.update_step = -1
        self.arrived: dict[int, set[str]] = {}
        self.visited: dict[str, None] = {}
        self.counts: dict[tuple[str, str], int] = {}
        self.pending: str | None = None
        self.failed: str | None = None
        self.rejected: str | None = None
        self.error: str | None = None
        self.last: tuple[str, str] | None = None
        self.entered = False

    def copy(self) -> OverlayFold:
        """An independent fold at the same point (the graph is shared, not copied)."""
        twin = copy.copy(self)
        for name in ("running", "upcoming", "visited", "counts"):
            setattr(twin, name, dict(getattr(self, name)))
        twin.arrived = {j: set(s) for j, s in self.arrived.items()}
        return twin

    def feed(self, events: Iterable[Event]) -> OverlayFold:
        """Fold ``events`` (in ``seq`` order, after those fed before); returns this fold."""
        for event in events:
            self.add(event)
        return self

    def _take(self, source: str, target: str) -> None:
        self.counts[source, target] = self.counts.get((source, target), 0) + 1
        self.last = (source, target)

    def add(self, event: Event) -> None:
        """Fold one event."""
        kind, node = event.type, event.node
        if node is not None and node not in self.known:
            node = None
        if kind == EventType.RUN_STARTED:
            self.status = "running"
            entry = self.graph.entry
            if entry is not None and not self.entered:
                self.entered = True
                self._take(START_ID, entry)
                self.current = entry
        elif kind == EventType.NODE_START and node is not None:
            self._started(node)
        elif kind == EventType.STATE_UPDATE and node is not None:
            self._updated(node, event.step, event.payload)
        elif kind == EventType.INTERRUPTED:
            self.status = "pending"
            self.current = node if node is not None else self.current
            # After-interrupts name the next node; the approval is about the one that ran.
            after = event.payload.get("after")
            self.pending = after if isinstance(after, str) and after in self.known else self.current
        elif kind == EventType.APPROVED:
            self.status, self.pending = "approved", None
        elif kind == EventType.REJECTED:
            self.status = "rejected"
            self.rejected = self.pending if self.pending is not None else node
            self.pending = self.current = None
        elif kind == EventType.FAILED:
            self.status = "failed"
            self.failed = node if node is not None else self.current
            self.error = _error_text(event.payload.get("error"))
            self.pending = self.current = None
        elif kind == EventType.COMPLETED:
            self.status, self.pending = "completed", None
            self.current = END_ID
            self.running, self.upcoming = {}, {}
        elif kind == EventType.CANCELLED:
            self.status = "cancelled"

    def _started(self, node: str) -> None:
        self.status = "running"
        if not self.entered:
            self.entered = True
            if node == self.graph.entry:
                self._take(START_ID, node)
        self.visited[node] = None
        self.current, self.pending = node, None
        self.running[node] = None
        self.upcoming.pop(node, None)
        for j, join in enumerate(self.joins):
            if node == join.target:
                self.arrived.pop(j, None)

    def _updated(self, node: str, step: int, payload: Mapping[str, Any]) -> None:
        if step != self.update_step:  # the first update of a new superstep
            self.update_step, self.upcoming = step, {}
        self.running.pop(node, None)
        # A fan-out lists every branch it leads to ("to"); one edge otherwise ("next").
        leads = payload.get("to")
        if not isinstance(leads, list):
            leads = [payload.get("next")]
        for nxt in leads:
            if isinstance(nxt, str) and nxt in self.known:
                self._take(node, nxt)
                if nxt != END_ID:
                    self.upcoming[nxt] = None
                # A branch that ends (or waits at a join) does not hide where the run goes
                # on: the superstep's updates come in task order, not in the order they lead.
                if nxt != END_ID or not self.upcoming:
                    self.current = nxt
        for j, join in enumerate(self.joins):
            if node not in join.sources:
                continue
            if join.target in leads:  # the last one in: the join fired
                self.arrived.pop(j, None)
            else:
                self.arrived.setdefault(j, set()).add(node)
                self.upcoming.pop(join.target, None)

    def overlay(self) -> Overlay:
        """The overlay of everything fed so far."""
        lit = ("running", "approved", "pending")
        active = tuple(self.running or self.upcoming) if self.status in lit else ()
        return Overlay(
            active=active if len(active) > 1 else (),
            waiting=tuple(
                (join.target, len(self.arrived[j]), len(join.sources))
                for j, join in enumerate(self.joins)
                if self.arrived.get(j)
            ),
            status=self.status,
            current=self.current,
            visited=tuple(self.visited),
            traversed=tuple((s, t, n) for (s, t), n in self.counts.items()),
            pending=self.pending,
            failed=self.failed,
            rejected=self.rejected,
            error=self.error,
            last=self.last,
        )


def _error_text(error: Any) -> str | None:
    if isinstance(error, Mapping):
        kind, message = error.get("type"), error.get("message")
        return ": ".join(str(part) for part in (kind, message) if part) or None
    return None if error is None else str(error)
