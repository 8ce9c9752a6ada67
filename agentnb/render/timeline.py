"""A run as a Gantt chart: ``timeline(run)`` in a notebook draws its event log.

Each node execution is a bar from ``node_start`` to ``state_update`` (or ``failed``,
``cancelled``, or the end of the log while it runs), coloured by outcome. Each attempt is its
own segment — failed, timed out, the backoff between them — with a mark where a retry,
timeout, breaker refusal or side effect happened. A wait for approval (``interrupted`` →
``approved``/``rejected``) is a thinner, rounded bar of its own.

Idle stretches (a person deciding, a notebook left between cells) would squash executions
into slivers, so the time axis is broken: a gap longer than all the activity together is
drawn narrow and labelled with its length. Pure Python, deterministic, every user text
escaped; mid-tone fills and mid-grey text read on light and dark themes. The rows come from
:mod:`~agentnb.render.timeline_bars`.
"""

from __future__ import annotations

import bisect
import html
import math
import re
from collections.abc import Container, Sequence
from typing import Any, Protocol

from agentnb.render.timeline_bars import Bar, Mark, Segment, bars_from_events, duration
from agentnb.store.records import Event, EventType

__all__ = [
    "COLORS", "INK", "Bar", "Mark", "Segment", "Timeline", "bars_from_events", "timeline",
    "timeline_svg",
]  # fmt: skip

COLORS = {
    "ok": "#2f9e63", "failed": "#d1495b", "error": "#e07a5f", "timeout": "#e0a100",
    "breaker": "#b5651d", "cancelled": "#8c8c8c", "running": "#3d85c6", "backoff": "#8c8c8c",
    "approval": "#8a6fd1", "approved": "#2f9e63", "rejected": "#d1495b", "pending": "#8a6fd1",
}  # fmt: skip
"""Fill of each outcome (``error``: an attempt that failed and was retried): mid tones,
legible on white and on dark backgrounds."""
INK = "#808080"
"""Text and axes: mid-grey, legible on light and dark themes alike."""

_ROW, _BAR, _HEAD, _PAD, _BREAK = 22, 12, 24, 8, 26
_ENDS = frozenset({"completed", "failed", "rejected", "cancelled"})
_INVISIBLE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff\ud800-\udfff\ufffe\uffff]"
)


# -- text ----------------------------------------------------------------------------------


def _tick_label(value: float, step: float) -> str:
    """A tick's time since the start, with as many decimals as the tick spacing needs."""
    if value >= 60:
        decimals = max(0, math.ceil(-math.log10(step) - 1e-9))
        value = round(value, decimals)
        minutes, secs = divmod(value, 60)
        hours, minutes = divmod(int(minutes), 60)
        sec = f"{secs:0{3 + decimals if decimals else 2}.{decimals}f}"
        return f"{hours}:{minutes:02d}:{sec}" if hours else f"{minutes}:{sec}"
    if value == 0:
        return "0"
    unit, name = (1e-6, "µs") if value < 1e-3 else (1e-3, "ms") if value < 1 else (1.0, "s")
    decimals = max(0, math.ceil(-math.log10(step / unit) - 1e-9))
    return f"{value / unit:.{decimals}f} {name}"


def _nice_step(seconds: float) -> float:
    """The smallest round tick spacing (1, 2, 5 × 10^k s; then whole minutes, hours) ≥ seconds."""
    if seconds >= 60:
        for step in (60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200):
            if step >= seconds:
                return float(step)
        return 86400.0 * math.ceil(seconds / 86400)
    power = 10.0 ** math.floor(math.log10(max(seconds, 1e-9)))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= seconds * (1 - 1e-9))


def _clip(text: str, limit: int) -> str:
    return text[: max(1, limit - 1)] + "…" if limit and len(text) > limit else text


def _text(value: object, limit: int = 0) -> str:
    """``value`` as XML text: invisible characters spelled out, clipped, then escaped."""
    text = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(value))
    return html.escape(_clip(text, limit), quote=True)


def _f(x: float) -> str:
    return f"{x:.1f}"


# -- time axis -----------------------------------------------------------------------------


class _Scale:
    """Time -> x: linear, except that long idle gaps are drawn at a fixed, small width."""

    def __init__(self, bars: Sequence[Bar], times: Sequence[float], x0: float, x1: float):
        spans = sorted(
            [(b.start, b.end) for b in bars if b.kind == "node"] + [(t, t) for t in times]
        )
        merged: list[list[float]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        active = sum(end - start for start, end in merged)
        threshold = max(active, 1e-3)
        pieces: list[tuple[float, float, bool]] = []  # (start, end, is a break)
        for i, (start, end) in enumerate(merged):
            if i and start - merged[i - 1][1] > threshold:
                pieces.append((merged[i - 1][1], start, True))
            elif i:
                pieces.append((merged[i - 1][1], start, False))
            pieces.append((start, end, False))
        self.t0 = merged[0][0] if merged else 0.0
        breaks = sum(1 for p in pieces if p[2])
        self.break_width = min(_BREAK, (x1 - x0) * 0.4 / breaks) if breaks else 0.0
        linear = sum(end - start for start, end, brk in pieces if not brk) or 1e-3
        self.per_second = (x1 - x0 - breaks * self.break_width) / linear
        self.pieces: list[tuple[float, float, bool, float, float]] = []
        x = x0
        for start, end, brk in pieces:
            width = self.break_width if brk else (end - start) * self.per_second
            self.pieces.append((start, end, brk, x, x + width))
            x += width
        self.starts = [p[0] for p in self.pieces]
        self.x0 = x0

    def x(self, t: float) -> float:
        if not self.pieces:
            return self.x0
        i = max(0, bisect.bisect_right(self.starts, t) - 1)
        start, end, _, xa, xb = self.pieces[i]
        if t >= end or end <= start:
            return xb if t >= end else xa
        return xa + (t - start) / (end - start) * (xb - xa)

    def breaks(self) -> list[tuple[float, float, float, float]]:
        return [(s, e, xa, xb) for s, e, brk, xa, xb in self.pieces if brk]

    def ticks(self, max_ticks: int) -> tuple[float, list[float]]:
        """The tick spacing and the tick times (seconds since the start) on linear stretches."""
        step = _nice_step(90 / self.per_second)
        out: list[float] = []
        for start, end, brk, _, _ in self.pieces:
            if brk:
                continue
            k = math.ceil((start - self.t0) / step - 1e-9)
            while self.t0 + k * step <= end + 1e-12 and len(out) < max_ticks:
                if not out or k * step > out[-1]:
                    out.append(k * step)
                k += 1
        return step, out


# -- drawing -------------------------------------------------------------------------------

_LEGEND = (
    ("ok", "ok"), ("failed", "failed"), ("error", "failed attempt, retried"),
    ("timeout", "timed out"), ("breaker", "breaker open"), ("cancelled", "cancelled"),
    ("running", "running"), ("backoff", "backoff"), ("approval", "waiting for approval"),
)  # fmt: skip
_MARKS = {  # path of each mark, drawn above the bar at (x, y): triangle, diamond, square
    "retry": "M{x0},{y} h6 l-3,4 z",
    "timeout": "M{x},{y0} l3,3 l-3,3 l-3,-3 z",
    "breaker": "M{x0},{y} h5 v5 h-5 z",
}
_MARK_COLORS = {"retry": COLORS["error"], "timeout": COLORS["timeout"]}


def _el(tag: str, content: str | None = None, /, **attrs: object) -> str:
    """An element; attribute values are escaped, ``content`` must be markup already."""
    names = {"cls": "class"}
    pairs = "".join(
        f' {names.get(k, k.replace("_", "-"))}="{_text(_f(v) if isinstance(v, float) else v)}"'
        for k, v in attrs.items()
    )
    return f"<{tag}{pairs}/>" if content is None else f"<{tag}{pairs}>{content}</{tag}>"


def _run_facts(events: Sequence[Event]) -> tuple[str, str, str, float]:
    """(graph, run id, status, seconds from the first event to the last) of a log."""
    graph, status = "", "running"
    for event in events:
        if event.type == EventType.RUN_STARTED:
            graph = str(event.payload.get("graph", ""))
        elif event.type in _ENDS or event.type == EventType.APPROVED:
            status = "running" if event.type == EventType.APPROVED else str(event.type)
        elif event.type == EventType.INTERRUPTED:
            status = "pending"
    times = [e.at for e in events]
    run_id = events[0].run_id if events else ""
    return graph, run_id, status, max(times, default=0.0) - min(times, default=0.0)


def _title(bar: Bar) -> str:
    took = duration(bar.end - bar.start)
    if bar.kind == "approval":
        return f"approval before {bar.node} (step {bar.step}): {bar.detail or bar.outcome}, {took}"
    parts = [f"{bar.node} (step {bar.step}): {bar.outcome} in {took}"]
    parts += [f"{bar.attempts} attempts"] * (bar.attempts > 1)
    parts += [f"+{duration(m.at - bar.start)}: {m.detail}" for m in bar.marks]
    return "\n".join(parts + [bar.detail] * bool(bar.detail))


def _row(bar: Bar, y: float, scale: _Scale, label_w: float) -> str:
    color = COLORS.get(bar.outcome, COLORS["running"])
    label_x = _PAD + 10.0 * (bar.kind == "approval")
    out = [
        _el("title", _text(_title(bar))),
        _el("text", _text(bar.node, int((label_w - label_x - 50) / 6.2)), cls="label",
            x=label_x, y=y + 15, fill=INK),
        _el("text", _text(duration(bar.end - bar.start)), cls="duration", x=label_w,
            y=y + 15, fill=INK, text_anchor="end", font_size=10),
    ]  # fmt: skip
    xa, xb = scale.x(bar.start), scale.x(bar.end)
    if bar.kind == "approval":  # a pause sign before the label, a rounded bar, a decision dot
        out.append(_el("path", None, d=f"M{_PAD},{y + 7} h2.5 v9 h-2.5 z m4.5,0 h2.5 v9 h-2.5 z",
                       fill=COLORS["approval"]))  # fmt: skip
        dashes = {"stroke_dasharray": "3 2"} if bar.outcome == "pending" else {}
        out.append(_el("rect", None, cls="wait", x=xa, y=y + 7, width=max(xb - xa, 4.0),
                       height=8, rx=4, fill=COLORS["approval"], fill_opacity=0.45,
                       stroke=COLORS["approval"], **dashes))  # fmt: skip
        if bar.outcome != "pending":
            out.append(_el("circle", None, cls=f"decision {bar.outcome}",
                           cx=max(xb, xa + 4), cy=y + 11, r=4, fill=color))  # fmt: skip
        return _el("g", "".join(out), cls=f"row approval {bar.outcome}")
    cursor, body = xa, []
    for seg in bar.segments:
        sa, sb = scale.x(seg.start), scale.x(seg.end)
        if seg.kind == "backoff":
            body.append(_el("rect", None, cls="backoff", x=max(sa, cursor), y=y + 9,
                            width=max(sb - max(sa, cursor), 0.0), height=4,
                            fill=COLORS["backoff"]))  # fmt: skip
            continue
        sa = max(sa, cursor)  # every attempt at least 2 px wide and 1 px apart
        sb = max(sb, sa + 2)
        fill = COLORS.get(seg.outcome, color)
        body.append(_el("rect", None, cls=f"attempt {seg.outcome}", x=sa, y=y + 5.0,
                        width=sb - sa, height=_BAR, fill=fill))  # fmt: skip
        cursor = sb + 1
    out.append(_el("rect", None, cls="span", x=xa, y=y + 5.0, width=max(xb, cursor - 1) - xa,
                   height=_BAR, fill=color, fill_opacity=0.2, stroke=color))  # fmt: skip
    out += body
    for mark in bar.marks:
        x = scale.x(mark.at)
        where = {"x": _f(x), "x0": _f(x - 3), "y": _f(y), "y0": _f(y - 1)}
        shape = _MARKS.get(mark.kind, "M{x0},{y} h3 v3 h-3 z").format(**where)
        fill = _MARK_COLORS.get(mark.kind, COLORS.get(mark.kind, INK))
        out.append(_el("path", None, cls=f"mark {mark.kind}", d=shape, fill=fill))
    return _el("g", "".join(out), cls=f"row node {bar.outcome}")


def _axis(scale: _Scale, y: float, x1: float) -> str:
    out = [_el("line", None, x1=scale.x0, y1=y, x2=x1, y2=y, stroke=INK)]
    taken: list[tuple[float, float]] = []  # label extents, so that labels never overlap
    for start, end, xa, xb in scale.breaks():
        mid, label = (xa + xb) / 2, "≈" + duration(end - start)
        taken.append((mid - len(label) * 3.0, mid + len(label) * 3.0))
        zigzag = f"M{_f(xa - 2)},{_f(y + 4)} l4,-8 M{_f(xb - 2)},{_f(y + 4)} l4,-8"
        out.append(_el("path", None, cls="axis-break", stroke=INK, d=zigzag))
        out.append(_el("text", _text(label), cls="break-label", x=mid, y=y + 15, fill=INK,
                       font_size=9, text_anchor="middle"))  # fmt: skip
    step, ticks = scale.ticks(max_ticks=200)
    for value in ticks:
        x, label = scale.x(scale.t0 + value), _tick_label(value, step)
        half = len(label) * 3.0
        if any(a - 4 < x + half and x - half < b + 4 for a, b in taken):
            continue
        taken.append((x - half, x + half))
        out.append(_el("line", None, cls="tick", x1=x, y1=y, x2=x, y2=y + 4, stroke=INK))
        out.append(_el("text", _text(label), cls="tick-label", x=x, y=y + 15, fill=INK,
                       font_size=9, text_anchor="middle"))  # fmt: skip
    return _el("g", "".join(out), cls="axis")


def _legend(bars: Sequence[Bar], y: float, width: float) -> tuple[str, float]:
    used = {s.outcome for b in bars for s in b.segments} | {b.outcome for b in bars}
    used |= {"approval"} if any(b.kind == "approval" for b in bars) else set()
    out, x = [], float(_PAD)
    for key, label in _LEGEND:
        if key in used:
            if x + 16 + len(label) * 5.5 > width:
                x, y = float(_PAD), y + 16
            out.append(_el("rect", None, x=x, y=y - 8, width=10, height=10, fill=COLORS[key]))
            out.append(_el("text", label, x=x + 14, y=y + 1, fill=INK, font_size=10))
            x += 24 + len(label) * 5.5
    return _el("g", "".join(out), cls="legend"), y


class _HasEvents(Protocol):
    @property
    def events(self) -> list[Event]: ...


class Timeline:
    """A run's timeline; a notebook draws it (SVG), a console prints a summary.

    Args:
        events: the run's event log, in any order.
        width: drawing width in pixels (at least 360).

    Attributes:
        bars: the rows, in the order they began.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = (
        ...     StateGraph("refund")
        ...     .add_node("plan", lambda state: {})
        ...     .add_node("pay", lambda state: {})
        ...     .add_edge("plan", "pay")
        ...     .set_entry_point("plan")
        ...     .add_interrupt_before("pay")
        ... )
        >>> from agentnb.render import Timeline
        >>> run = graph.compile().start({})
        >>> _ = run.step()
        >>> timeline = Timeline(run.events)
        >>> timeline
        <Timeline: 2 rows of 4 events>
        >>> [(bar.kind, bar.node, bar.outcome) for bar in timeline.bars]
        [('node', 'plan', 'ok'), ('approval', 'pay', 'pending')]
    """

    def __init__(self, events: Sequence[Event], *, width: int = 720) -> None:
        self.events = tuple(sorted(events, key=lambda e: (e.run_id, e.seq)))
        self.width = max(int(width), 360)
        self.bars = bars_from_events(self.events)

    def svg(self) -> str:
        """The drawing: a standalone ``<svg>`` document, no scripts, no external references."""
        bars, width = self.bars, self.width
        graph, run_id, status, took = _run_facts(self.events)
        label_w = min(180.0, max(110.0, width * 0.24))
        x1 = width - _PAD - 4.0
        scale = _Scale(bars, [e.at for e in self.events], label_w + _PAD, x1)
        head = f"{graph or 'run'} · {run_id[:8]} · {status} · {duration(took)}"
        head = head if self.events else "no events"
        body = [_el("text", _text(head, int(width / 6.5)), cls="title", x=_PAD, y=16,
                    fill=INK, font_weight="bold")]  # fmt: skip
        for start, end, xa, xb in scale.breaks():
            note = _el("title", _text(f"{duration(end - start)} idle, not drawn to scale"))
            body.append(_el("rect", note, cls="break", x=xa, y=_HEAD, width=xb - xa,
                            height=len(bars) * _ROW, fill=INK, fill_opacity=0.12))  # fmt: skip
        body += [_row(bar, _HEAD + i * _ROW, scale, label_w) for i, bar in enumerate(bars)]
        axis_y = _HEAD + len(bars) * _ROW + 4.0
        body.append(_axis(scale, axis_y, x1))
        legend, legend_y = _legend(bars, axis_y + 34, width)
        height = int(legend_y + 12)
        return _el("svg", "".join([*body, legend]), xmlns="http://www.w3.org/2000/svg",
                   cls="agentnb-timeline", width=width, height=height,
                   viewBox=f"0 0 {width} {height}", font_family="sans-serif", font_size=11,
                   role="img", aria_label=f"timeline of {head}")  # fmt: skip

    def __str__(self) -> str:
        graph, run_id, status, took = _run_facts(self.events)
        lines = [f"run {run_id[:12]} of {graph!r}: {status}, {duration(took)}"]
        width = max((len(b.node) for b in self.bars), default=0) + 2
        for bar in self.bars:
            mark = "⏸" if bar.kind == "approval" else "▶"
            extra = [_clip(bar.detail, 120)] if bar.detail else []
            if bar.attempts > 1:
                extra.insert(0, f"{bar.attempts} attempts")
            extra += [f"{n} {k}" for k in ("timeout", "breaker")
                      if (n := sum(m.kind == k for m in bar.marks))]  # fmt: skip
            lines.append(
                f"  {mark} {bar.node:<{width}}{bar.outcome:<10}"
                f"{duration(bar.end - bar.start):>10}  {'; '.join(extra)}".rstrip()
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Timeline: {len(self.bars)} rows of {len(self.events)} events>"

    def _repr_svg_(self) -> str:
        return self.svg()

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None
    ) -> dict[str, str]:
        bundle = {"text/plain": str(self), "image/svg+xml": self.svg()}
        return {
            mime: data
            for mime, data in bundle.items()
            if (include is None or mime in include) and (exclude is None or mime not in exclude)
        }

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


def timeline_svg(events: Sequence[Event], *, width: int = 720) -> str:
    """A run's events drawn as a Gantt chart (SVG text); see the module docstring.

    Args:
        events: the run's event log (``run.events``), in any order.
        width: pixels; at least 360.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = (
        ...     StateGraph("refund")
        ...     .add_node("plan", lambda state: {})
        ...     .add_node("pay", lambda state: {})
        ...     .add_edge("plan", "pay")
        ...     .set_entry_point("plan")
        ...     .add_interrupt_before("pay")
        ... )
        >>> from agentnb.render import timeline_svg
        >>> run = graph.compile().start({})
        >>> _ = run.step()
        >>> timeline_svg(run.events, width=480).startswith("<svg")
        True
    """
    return Timeline(events, width=width).svg()


def timeline(run: _HasEvents, *, width: int = 720) -> Timeline:
    """The timeline of ``run`` (anything with ``.events``: a ``Run``, a list wrapper...).

    The events come from the store, so runs driven by other processes draw too.

    Example:
        >>> from agentnb import StateGraph
        >>> g = StateGraph("hi").add_node("greet", lambda s: {"hi": 1}).set_entry_point("greet")
        >>> print(timeline(g.compile().invoke({})))  # doctest: +ELLIPSIS
        run ... of 'hi': completed, ...
          ▶ greet  ok ...
    """
    return Timeline(run.events, width=width)
