"""The static twin of a live view: what a notebook shows when no kernel runs the widget.

JupyterLab and Notebook 7 always pick the widget renderer for a widget output, and without
its model (the notebook reopened, the kernel gone) they print "Error displaying widget:
model not found" instead of any fallback MIME type in the same bundle. So the view is
displayed with a sibling output holding this snapshot: the drawing with the overlay of the
run or machine instance, where it stands and its last events, as escaped HTML (and plain
text for other front ends). While the live view renders, the widget's stylesheet hides the
sibling, so the two never show at once; without a kernel the stylesheet is not loaded and
the snapshot shows.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentnb.errors import MissingDependency, RenderError
from agentnb.graph.run import Run
from agentnb.render.extract import diagram_from_graph, diagram_from_instance, overlay_from_events
from agentnb.render.model import Diagram
from agentnb.render.svg import render_svg
from agentnb.render.text import to_text
from agentnb.store.records import Event, RunRecord
from agentnb.widgets._events import short, summarize

if TYPE_CHECKING:
    from agentnb.fsm import MachineInstance, TransitionRecord

__all__ = [
    "CLOSED_NOTE",
    "NOTE",
    "SNAPSHOT_CLASS",
    "machine_snapshot_bundle",
    "machine_snapshot_text",
    "snapshot_bundle",
    "snapshot_text",
    "static_bundle",
]

SNAPSHOT_CLASS = "agentnb-static"
"""Class of the snapshot's HTML root; the live view's CSS hides it beside a live view."""
LAST_EVENTS = 12
NOTE = "(A snapshot taken when the view was displayed; run the notebook for the live view.)"
CLOSED_NOTE = "(The live panel was closed; this is how things stood then.)"
"""Ends the snapshot a panel leaves in place of itself when closed (``LiveView.close``)."""


def snapshot_text(
    record: RunRecord, events: Sequence[Event], diagram_text: str, note: str = NOTE
) -> str:
    """The run as plain text: the diagram listing, the decision, the last events."""
    lines = [diagram_text]
    if record.decided_by:
        lines.append(f"decided by {_decider(record.decided_by, events)}")
    if events:
        lines.append(f"last events (of {len(events)}):")
        for event in events[-LAST_EVENTS:]:
            node = f" {event.node}" if event.node else ""
            what = f"#{event.seq} step {event.step} {event.type}{node}"
            lines.append(f"  {what} — {summarize(event)}")
    lines.append(note)
    return "\n".join(lines)


def _decider(by: str, events: Sequence[Event]) -> str:
    """The name given and, as the CLI shows it, who the deciding process vouched for."""
    for event in reversed(events):
        if event.type in ("approved", "rejected"):
            identity = event.payload.get("identity")
            return f"{by} (identity {identity})" if identity else by
    return by


def machine_snapshot_text(
    records: Sequence[TransitionRecord], context: object, diagram_text: str, note: str = NOTE
) -> str:
    """A machine instance as plain text: the diagram listing, its context, its last events."""
    lines = [diagram_text, f"context: {short(context, 400)}"]
    if records:
        lines.append(f"last events (of {len(records)}):")
        lines += [f"  {record}" for record in records[-LAST_EVENTS:]]
    lines.append(note)
    return "\n".join(lines)


def _inline(svg: str) -> str:
    # An XML declaration and a DOCTYPE mean nothing inside HTML: keep the <svg> element only.
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else ""


def static_bundle(diagram: Diagram, text: str, *, id_prefix: str = "") -> dict[str, str]:
    """``text/plain`` and ``text/html`` showing ``diagram`` drawn, above ``text``.

    The HTML holds only escaped text and the SVG from :func:`agentnb.render.render_svg`
    (which refuses anything executable); without Graphviz it holds the text alone.
    """
    try:
        svg = _inline(render_svg(diagram, id_prefix=id_prefix))
    except (MissingDependency, RenderError):
        svg = ""
    body = f"{svg}<pre>{html.escape(text)}</pre>"
    return {
        "text/plain": text,
        "text/html": f'<div class="{SNAPSHOT_CLASS}">{body}</div>',
    }


def snapshot_bundle(
    run: Run, *, id_prefix: str = "", note: str = NOTE, drawn: Diagram | None = None
) -> dict[str, str]:
    """``text/plain`` and ``text/html`` describing ``run`` as it stands now (``drawn``:
    the diagram to draw instead of the workflow's own, with the run's overlay)."""
    record = run.record
    events = run.events
    overlay = overlay_from_events(events, run.workflow)
    title = f"{run.workflow.name} · run {run.run_id} · {record.status}"
    if drawn is None:
        diagram = diagram_from_graph(run.workflow, title=title, overlay=overlay)
    else:
        diagram = dataclasses.replace(drawn, title=title, overlay=overlay)
    text = snapshot_text(record, events, to_text(diagram), note)
    return static_bundle(diagram, text, id_prefix=id_prefix)


def machine_snapshot_bundle(
    instance: MachineInstance, *, id_prefix: str = "", note: str = NOTE
) -> dict[str, str]:
    """``text/plain`` and ``text/html`` describing a machine instance as it stands now."""
    from agentnb.fsm import Statechart  # the fsm package loads with the widget
    from agentnb.render.extract_chart import diagram_from_chart_instance

    if isinstance(instance.machine, Statechart):
        diagram = diagram_from_chart_instance(instance)
    else:
        diagram = diagram_from_instance(instance)
    text = machine_snapshot_text(instance.history, instance.context, to_text(diagram), note)
    return static_bundle(diagram, text, id_prefix=id_prefix)
