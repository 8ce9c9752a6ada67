"""Events as the live view shows them: short rows, one-line summaries, overlays per step.

Everything here is pure and returns JSON-ready data. User data (state values, node names,
comments) stays data: the browser renders it with ``textContent``, never as HTML.

Example:
    >>> from agentnb.store.records import Checkpoint, Event, RunRecord, Status
    >>> e = Event("r", 3, 1, "state_update", "plan", {"delta": {"amount": 5}, "next": "pay"}, 0.0)
    >>> event_row(e)["summary"]
    'amount=5 → pay'

A superstep runs several tasks; the panel names all of them (:func:`superstep_text`), and
a ``state_update``'s "→" names the next superstep as the whole step's updates lead to it
(:func:`next_texts`), not only the edge of the one task that wrote the row.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentnb.graph.builder import END
from agentnb.graph.workflow import Workflow
from agentnb.render.extract import overlay_from_events
from agentnb.render.model import Overlay
from agentnb.store.records import Event, RunRecord, Status

__all__ = [
    "SUMMARY_LIMIT",
    "decided_payload",
    "event_row",
    "events_until",
    "frontier_text",
    "last_delta",
    "next_texts",
    "overlay_at",
    "overlay_payload",
    "pending_payload",
    "run_error_text",
    "settled_at",
    "short",
    "stream_text",
    "summarize",
    "superstep_text",
]

SUMMARY_LIMIT = 160
"""Characters in a log row's summary; the full payload stays in the store."""

# Events numbered k that describe the run as it stood right after its k-th node. The
# others numbered k (a decision on the pause, node_start, retry, effect, custom...) came
# later, on the way to the next node.
_SETTLED = frozenset({"run_started", "state_update", "interrupted", "completed"})


def short(value: Any, limit: int = 48) -> str:
    """``value`` as compact JSON, cut to ``limit`` characters with an ellipsis."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):  # a custom event payload the store accepted as text
        text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stream_text(items: Iterable[Any]) -> str:
    """What a node emitted, as the panel shows it: text as is, anything else as short JSON."""
    return "".join(item if isinstance(item, str) else short(item, 200) + " " for item in items)


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"


def _delta_text(delta: Any) -> str:
    if not isinstance(delta, dict) or not delta:
        return "no change"
    parts = []
    for key, value in delta.items():
        # Lists are usually appended to (messages): their length says more than their text.
        shown = f"+{len(value)} item(s)" if isinstance(value, list) else short(value)
        parts.append(f"{key}={shown}")
    return ", ".join(parts)


def superstep_text(nodes: Iterable[str], sends: Iterable[str] = ()) -> str:
    """The tasks of one superstep as a teacher names them.

    ``nodes`` run once each (named by name, the order the superstep merges them in;
    repeats dropped); ``sends`` holds the node of each ``Send`` task, counted per node, after
    them. ``"END"`` when there is nothing left to run.

    Example:
        >>> superstep_text(["web", "papers"])
        'papers + web'
        >>> superstep_text([], ["write", "write", "write"])
        'write ×3 (Send)'
        >>> superstep_text(["cite"], ["check"])
        'cite + check (Send)'
        >>> superstep_text([])
        'END'
    """
    parts = sorted({n for n in nodes if n != END})
    counted = Counter(sends)
    parts += [f"{n} ×{k} (Send)" if k > 1 else f"{n} (Send)" for n, k in counted.items()]
    return " + ".join(parts) or END


def frontier_text(node: str, tasks: Mapping[str, Any] | None) -> str:
    """What runs next from a checkpoint: its ``node``, or every task of its ``tasks``
    (the frontier a fan-out or ``Send`` left: ``{"nodes": [...], "sends": [[node, arg]...]}``).

    Example:
        >>> frontier_text("web", {"nodes": ["web", "papers"], "sends": [], "waiting": []})
        'papers + web'
        >>> frontier_text("write", None)
        'write'
    """
    if not tasks:
        return node
    nodes = [n for n in tasks.get("nodes") or () if isinstance(n, str)]
    sends = [s[0] for s in tasks.get("sends") or () if isinstance(s, list | tuple) and s]
    return superstep_text(nodes, [s for s in sends if isinstance(s, str)]) or node


def _leads(payload: Mapping[str, Any]) -> list[str]:
    """Where one task's ``state_update`` says it leads (``to`` when several, else ``next``)."""
    to = payload.get("to")
    if isinstance(to, list):
        return [t for t in to if isinstance(t, str) and t != END]
    nxt = payload.get("next")
    return [nxt] if isinstance(nxt, str) and nxt != END else []


def next_texts(events: Iterable[Event]) -> dict[int, str]:
    """For each step of the ``state_update`` events given, the next superstep, named.

    A superstep's updates are committed together; together they say what runs next: every
    node one of them leads to (once, however many branches lead there), and the ``Send``
    tasks (a node one router named several times). A branch that waits at a join leads
    nowhere by itself (``next`` is ``END``): the run goes where its siblings lead.

    Example:
        >>> web = Event("r", 6, 2, "state_update", "web", {"delta": {}, "next": "END"}, 0.0)
        >>> cite = Event("r", 7, 2, "state_update", "papers", {"delta": {}, "next": "cite"}, 0.0)
        >>> next_texts([web, cite])
        {2: 'cite'}
    """
    nodes: dict[int, list[str]] = {}
    sends: dict[int, list[str]] = {}
    for event in events:
        if event.type != "state_update":
            continue
        counted = Counter(_leads(event.payload))
        nodes.setdefault(event.step, []).extend(n for n, k in counted.items() if k == 1)
        sends.setdefault(event.step, []).extend(
            n for n, k in counted.items() if k > 1 for _ in range(k)
        )
    return {step: superstep_text(nodes[step], sends[step]) for step in nodes}


def summarize(event: Event, leads_to: str | None = None) -> str:
    """One line saying what ``event`` means, at most :data:`SUMMARY_LIMIT` characters.

    ``leads_to``: for a ``state_update``, the next superstep as :func:`next_texts` names it
    from the whole step (without it, the row's own edge: one task's view).
    """
    p = event.payload
    kind = event.type
    if kind == "state_update":
        text = f"{_delta_text(p.get('delta'))} → {leads_to or p.get('next')}"
    elif kind == "interrupted":
        after = p.get("after")
        text = (
            f"awaiting approval after {after} (next: {event.node})"
            if p.get("when") == "after"
            else f"awaiting approval before {event.node}"
        )
    elif kind in ("approved", "rejected"):
        comment = p.get("comment")
        text = f"by {p.get('by')}" + (f": {comment}" if comment else "")
    elif kind == "failed":
        error = p.get("error") or {}
        text = f"{error.get('type')}: {error.get('message')}" if isinstance(error, dict) else ""
    elif kind == "run_started":
        text = f"graph {p.get('graph')}, at most {p.get('max_steps')} steps"
    elif kind == "completed":
        text = "run completed"
    elif kind == "node_start":
        text = "running"
    elif kind == "retry":
        text = f"attempt {p.get('attempt')} failed, retry in {p.get('wait')} s"
    elif kind in ("effect", "effect_replayed"):
        text = f"{p.get('name')}" + (" (recorded result reused)" if kind != "effect" else "")
    elif kind == "cancelled":
        text = f"cancelled ({p.get('reason')})"
    elif isinstance(p.get("data"), list) and isinstance(p.get("count"), int):
        # What a node streamed (ctx.emit), kept as one record at the end of its step.
        text = f"{p['count']} emitted: {stream_text(p['data'])}"
    else:
        text = short(p, SUMMARY_LIMIT)
    return _cut(text)


def event_row(event: Event, leads_to: str | None = None) -> dict[str, Any]:
    """The log row the browser shows for ``event`` (``leads_to`` as for :func:`summarize`);
    a ``Send`` task's row names its task (``write[1]``)."""
    task = event.payload.get("task")
    return {
        "seq": event.seq,
        "step": event.step,
        "type": event.type,
        "node": task if isinstance(task, str) and event.type != "interrupted" else event.node,
        "at": event.at,
        "summary": summarize(event, leads_to),
    }


def settled_at(event: Event, step: int) -> bool:
    """Whether ``event`` describes the run as it stood after ``step`` nodes."""
    return event.step < step or (event.step == step and event.type in _SETTLED)


def events_until(events: Iterable[Event], step: int) -> list[Event]:
    """The events that describe the run as it stood after ``step`` nodes (for time travel)."""
    return [e for e in events if settled_at(e, step)]


def last_delta(events: Sequence[Event]) -> dict[str, Any]:
    """What the last step's ``state_update`` events in ``events`` changed (``{}`` if none):
    every task's delta of that superstep, merged in order."""
    merged: dict[str, Any] = {}
    step: int | None = None
    for event in reversed(events):
        if event.type != "state_update":
            continue
        if step is not None and event.step != step:
            break
        step = event.step
        delta = event.payload.get("delta")
        merged = {**(delta if isinstance(delta, dict) else {}), **merged}
    return merged


def overlay_payload(overlay: Overlay, running: str | None = None) -> dict[str, Any]:
    """An overlay as the browser toggles it onto the drawing's classes.

    Args:
        overlay: what the stored events say.
        running: a node executing right now (its ``node_start`` is not committed yet).
    """
    return {
        "status": overlay.status,
        "current": running or overlay.current,
        "running": running,
        "visited": list(dict.fromkeys([*overlay.visited, *([running] if running else [])])),
        "traversed": [[s, t, n] for s, t, n in overlay.traversed],
        "pending": overlay.pending,
        "failed": overlay.failed,
        "rejected": overlay.rejected,
        "last": list(overlay.last) if overlay.last else None,
        "active": list(overlay.active),
    }


def overlay_at(events: Sequence[Event], workflow: Workflow, step: int) -> dict[str, Any]:
    """The overlay after ``step`` nodes, for the history slider."""
    return overlay_payload(overlay_from_events(events_until(events, step), workflow))


def pending_payload(events: Sequence[Event], digest: str | None) -> dict[str, Any]:
    """What an approver is shown: the node, where the pause is, the exact state, its digest.

    When a superstep holds several tasks, each is shown in turn (``task``, and ``waiting``:
    every task still undecided), with the digest of that task's own pause.
    """
    held = _undecided(events)
    for event in reversed(events):
        if event.type == "interrupted":
            p = event.payload
            task = p.get("task")
            if held and task != held[0]:  # the first of them still undecided, in order
                continue
            shown = {
                "node": event.node,
                "when": p.get("when"),
                "after": p.get("after"),
                "step": event.step,
                # The stored digest is the one the store will check; the event carries the
                # same value, but the record is the arbiter if they ever differ.
                "digest": (p.get("digest") if held else None) or digest or p.get("digest"),
                "state": p.get("state"),
            }
            if held:
                shown.update(task=task, waiting=held)
            if p.get("when") == "input":
                shown["question"] = p.get("question")
            return shown
    return {}


def _undecided(events: Sequence[Event]) -> list[str]:
    """The held tasks of the latest pause no decision has named yet, in pause order."""
    decided: set[str] = set()
    held: list[str] = []
    for event in reversed(events):
        task = event.payload.get("task")
        if event.type in ("approved", "rejected") and isinstance(task, str):
            decided.add(task)
        elif event.type == "interrupted":
            if not isinstance(task, str):
                break
            if task not in decided and task not in held:
                held.append(task)
        elif held:
            break  # the hold's interrupts are written together
    return held[::-1]


def decided_payload(events: Sequence[Event]) -> dict[str, Any]:
    """The decision on the latest pause (``{}`` while undecided or never paused)."""
    if _undecided(events):
        return {}  # some held tasks still wait: the pause is not decided yet
    for event in reversed(events):
        if event.type in ("approved", "rejected"):
            p = event.payload
            return {
                "decision": event.type,
                "by": p.get("by"),
                "identity": p.get("identity"),
                "comment": p.get("comment"),
                "at": event.at,
                "node": event.node,
                "step": event.step,
            }
        if event.type == "interrupted":  # paused again since the last decision
            return {}
    return {}


def run_error_text(record: RunRecord) -> str:
    """Why a failed run failed, in one line (``""`` unless it failed)."""
    if record.status != Status.FAILED or not record.error:
        return ""
    error = record.error
    where = f" at {error.get('node')!s}" if error.get("node") else ""
    return f"The run failed{where}: {error.get('type')}: {error.get('message')}"
