"""A run's event log as timeline rows: the model :mod:`agentnb.render.timeline` draws.

:func:`bars_from_events` reads a run's events into :class:`Bar` rows, in the order they
began: one per node execution (``node_start`` to ``state_update``, ``failed``,
``cancelled``, or the end of the log while it runs) and one per wait for approval
(``interrupted`` → ``approved``/``rejected``). A node's bar holds a :class:`Segment` per
attempt and per backoff between them, and a :class:`Mark` where a retry, timeout, breaker
refusal or side effect happened. Pure Python, no drawing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentnb.store.records import Event, EventType

__all__ = ["Bar", "Mark", "Segment", "bars_from_events", "duration"]

_BUILTIN = frozenset(str(t) for t in EventType)
_EFFECTS = frozenset({str(EventType.EFFECT), str(EventType.EFFECT_REPLAYED)})


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of a node execution: one ``attempt`` or the ``backoff`` before the next."""

    kind: str
    start: float
    end: float
    outcome: str
    """For attempts: ``ok``, ``error`` (retried), ``timeout``, ``breaker``, ``failed``..."""
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment inside a bar: ``retry``, ``timeout``, ``breaker``, ``effect`` or ``event``."""

    kind: str
    at: float
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Bar:
    """One row: a node execution (``kind="node"``) or a wait for approval (``"approval"``).

    ``outcome`` is ``ok``/``failed``/``timeout``/``breaker``/``cancelled``/``running`` for a
    node, ``approved``/``rejected``/``pending`` for an approval.
    """

    kind: str
    node: str
    step: int
    start: float
    end: float
    outcome: str
    segments: tuple[Segment, ...] = ()
    marks: tuple[Mark, ...] = ()
    detail: str = ""

    @property
    def attempts(self) -> int:
        return sum(1 for s in self.segments if s.kind == "attempt")


@dataclass
class _Open:
    """A bar being built while the log is read."""

    kind: str
    node: str
    step: int
    start: float
    index: int  # order of opening: rows are listed in the order they began
    attempt_start: float = 0.0
    segments: list[Segment] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    attempt_flag: str = ""  # "timeout" or "breaker" once the current attempt hit one

    def close(self, end: float, outcome: str, detail: str = "") -> Bar:
        end = max(end, self.start)
        if self.kind == "node":
            if outcome == "failed" and self.attempt_flag:
                outcome = self.attempt_flag
            start = min(max(self.attempt_start, self.start), end)
            self.segments.append(Segment("attempt", start, end, outcome, detail))
        return Bar(
            self.kind, self.node, self.step, self.start, end, outcome,
            tuple(self.segments), tuple(self.marks), detail,
        )  # fmt: skip


def _error_text(payload: dict[str, Any]) -> str:
    error = payload.get("error")
    if isinstance(error, dict):
        return f"{error.get('type', '')}: {error.get('message', '')}"
    return ""


def bars_from_events(events: Sequence[Event]) -> list[Bar]:
    """The rows of a timeline, in the order they began (each run's events read by ``seq``)."""
    ordered = sorted(events, key=lambda e: (e.run_id, e.seq))
    last = max((e.at for e in ordered), default=0.0)
    # The node executions in flight, by (run, task): the tasks of a superstep run side by
    # side, each its own row (a lane), closed by its own update.
    nodes: dict[tuple[str, str], _Open] = {}
    waits: dict[tuple[str, str], _Open] = {}  # the pauses awaiting a decision, by run
    done: list[tuple[int, Bar]] = []
    counter = itertools.count()

    def finish(
        table: dict[tuple[str, str], _Open],
        key: tuple[str, str],
        end: float,
        outcome: str,
        detail: str = "",
    ) -> None:
        bar = table.pop(key, None)
        if bar is not None:
            done.append((bar.index, bar.close(end, outcome, detail)))

    def in_flight(run: str, node: str | None) -> _Open | None:
        return next((b for (r, _), b in nodes.items() if r == run and b.node == node), None)

    for event in ordered:
        kind, run, at, payload = str(event.type), event.run_id, event.at, event.payload
        task = (run, str(payload.get("task", event.node or "")))
        current = in_flight(run, event.node)
        if kind == EventType.NODE_START:
            finish(nodes, task, at, "cancelled")  # a start without an end: it was cut off
            nodes[task] = _Open("node", event.node or "", event.step, at, next(counter), at)
        elif kind == EventType.INTERRUPTED:
            finish(waits, (run, ""), at, "pending")
            waits[run, ""] = _Open("approval", event.node or "", event.step, at, next(counter))
        elif kind in (EventType.APPROVED, EventType.REJECTED):
            by, comment = payload.get("by", ""), payload.get("comment")
            text = f"{kind} by {by}" + (f": {comment}" if comment else "")
            finish(waits, (run, ""), at, kind, text)
        elif kind == EventType.STATE_UPDATE:
            finish(nodes, task, at, "ok")
        elif kind in (EventType.FAILED, EventType.CANCELLED):
            finish(nodes, task, at, kind, _error_text(payload))
            for key in [k for k in nodes if k[0] == run]:  # its siblings stopped with it
                finish(nodes, key, at, "cancelled")
        elif current is None:
            continue
        elif kind == EventType.RETRY:
            wait = max(0.0, float(payload.get("wait") or 0.0))
            error = _error_text(payload)
            outcome = current.attempt_flag or "error"
            current.segments.append(Segment("attempt", current.attempt_start, at, outcome, error))
            current.segments.append(Segment("backoff", at, at + wait, "backoff"))
            current.marks.append(Mark("retry", at, f"retry after attempt {payload.get('attempt')}"))
            current.attempt_start, current.attempt_flag = at + wait, ""
        elif kind == EventType.TIMEOUT:
            current.attempt_flag = "timeout"
            seconds = float(payload.get("seconds") or 0.0)
            current.marks.append(Mark("timeout", at, f"timed out after {duration(seconds)}"))
        elif kind == EventType.BREAKER_OPEN:
            current.attempt_flag = "breaker"
            current.marks.append(Mark("breaker", at, f"breaker {payload.get('breaker')} open"))
        elif kind in (EventType.EFFECT, EventType.EFFECT_REPLAYED) or kind not in _BUILTIN:
            detail = f"{kind} {payload.get('name', '')}".strip()
            current.marks.append(Mark("effect" if kind in _EFFECTS else "event", at, detail))
    for key in sorted(nodes):
        finish(nodes, key, last, "running")
    for key in sorted(waits):
        finish(waits, key, last, "pending", "waiting for a decision")
    return [bar for _, bar in sorted(done, key=lambda pair: pair[0])]


def duration(seconds: float) -> str:
    """A readable length of time: ``850 µs``, ``12.3 ms``, ``4.5 s``, ``3 min 20 s``..."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 60:
        return f"{seconds:.3g} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"
