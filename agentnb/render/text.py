"""Diagram IR -> plain text: the fallback when Graphviz is missing, and ``text/plain`` output.

Example:
    >>> from agentnb.render.model import Diagram, Edge, Node, NodeKind
    >>> d = Diagram(
    ...     (Node("START", "", NodeKind.START), Node("a", "a", entry=True)),
    ...     (Edge("START", "a"),),
    ...     title="demo",
    ... )
    >>> print(to_text(d))
    demo: 1 node, 1 edge
      a  (entry)
    edges (-> always, ~> conditional):
      START -> a
"""

from __future__ import annotations

from agentnb.render.dot import display_text
from agentnb.render.model import Diagram, EdgeKind, Node, NodeKind, Overlay

__all__ = ["to_text"]


def _name(text: str) -> str:
    # One line per item: a newline inside a name must not start a new line of the listing.
    return display_text(text).replace("\n", "\\n")


def _notes(node: Node) -> list[str]:
    notes = []
    if node.entry:
        notes.append("entry")
    if node.pause_before:
        notes.append("approval before")
    if node.pause_after:
        notes.append("approval after")
    if node.kind is NodeKind.MISSING:
        notes.append("not defined yet")
    if node.kind is NodeKind.FINAL:
        notes.append("final")
    if node.description:
        notes.append(_name(node.description))
    return notes


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _instance_lines(overlay: Overlay) -> list[str]:
    # A machine instance is *in* a state; nothing is "next" until an event arrives.
    status = overlay.status or "not started"
    where = f" — in {_name(overlay.current)}" if overlay.current else ""
    lines = [f"instance: {status}{where}"]
    if overlay.active:  # a statechart's configuration
        lines.append("  active: " + ", ".join(_name(n) for n in overlay.active))
    if overlay.visited:
        lines.append("  visited: " + ", ".join(_name(n) for n in overlay.visited))
    if overlay.traversed:
        taken = (f"{_name(s)} -> {_name(t)} ×{n}" for s, t, n in overlay.traversed)
        lines.append("  taken: " + ", ".join(taken))
    return lines


def _overlay_lines(overlay: Overlay) -> list[str]:
    status = overlay.status or "not started"
    where = {
        "pending": f" — awaiting approval at {_name(overlay.pending or '?')}",
        "failed": f" — {_name(overlay.failed or '?')} failed",
        "rejected": f" — approval of {_name(overlay.rejected or '?')} rejected",
    }.get(status, "")
    if not where and overlay.active and status in ("running", "approved", "cancelled"):
        where = " — next: " + ", ".join(_name(n) for n in overlay.active)
    elif not where and overlay.current and status in ("running", "approved", "cancelled"):
        where = f" — next: {_name(overlay.current)}"
    lines = [f"run: {status}{where}"]
    for target, arrived, total in overlay.waiting:
        lines.append(f"  {_name(target)} waits: {arrived} of {total} arrived")
    if overlay.error:
        lines.append(f"  error: {_name(overlay.error)}")
    if overlay.visited:
        lines.append("  visited: " + ", ".join(_name(n) for n in overlay.visited))
    if overlay.traversed:
        taken = (f"{_name(s)} -> {_name(t)} ×{n}" for s, t, n in overlay.traversed)
        lines.append("  taken: " + ", ".join(taken))
    return lines


def to_text(diagram: Diagram) -> str:
    """A readable listing of the diagram's nodes, edges and run overlay.

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
        >>> from agentnb.render import diagram_for, to_text
        >>> print(to_text(diagram_for(graph)))
        refund: 2 nodes, 3 edges
          plan  (entry)
          pay  (approval before)
        edges (-> always, ~> conditional):
          START -> plan
          plan -> pay
          pay -> END
    """
    hidden = (NodeKind.START, NodeKind.END, NodeKind.INITIAL, NodeKind.ANCHOR)
    nodes = [n for n in diagram.nodes if n.kind not in hidden]
    title = _name(diagram.title or "diagram")
    if diagram.machine:
        # The arrow from the start marker is the initial state, not a declared transition;
        # a statechart's arrows from a compound state's initial dot are not either.
        markers = {n.id for n in diagram.nodes if n.kind in (NodeKind.START, NodeKind.INITIAL)}
        declared = [e for e in diagram.edges if e.source not in markers or e.label]
        head = f"{title}: {_plural(len(nodes), 'state')}, {_plural(len(declared), 'transition')}"
    else:
        head = f"{title}: {_plural(len(nodes), 'node')}, {_plural(len(diagram.edges), 'edge')}"
    lines = [head]
    depth = {c.id: 0 for c in diagram.clusters}
    for cluster in diagram.clusters:
        depth[cluster.id] = 0 if cluster.parent is None else depth[cluster.parent] + 1
    for cluster in diagram.clusters:  # compound states, then their children (statecharts)
        kind = "parallel" if cluster.parallel else "compound"
        lines.append("  " * (depth[cluster.id] + 1) + f"{_name(cluster.label)}/  ({kind})")
    for node in nodes:
        notes = _notes(node)
        if node.cluster is not None:
            notes.append(f"in {_name(node.cluster)}")
        if node.kind is NodeKind.HISTORY:
            notes.append("history")
        lines.append(f"  {_name(node.label)}" + (f"  ({'; '.join(notes)})" if notes else ""))
    if diagram.edges:
        lines.append("edges (-> always, ~> conditional):")
    for edge in diagram.edges:
        arrow = "~>" if edge.kind is EdgeKind.CONDITIONAL else "->"
        text = f"  [{_name(edge.text)}]" if edge.text else ""
        source = edge.tail_cluster or edge.source
        target = edge.head_cluster or edge.target
        lines.append(f"  {_name(source)} {arrow} {_name(target)}{text}")
    if diagram.overlay is not None:
        lines += (_instance_lines if diagram.machine else _overlay_lines)(diagram.overlay)
    return "\n".join(lines)
