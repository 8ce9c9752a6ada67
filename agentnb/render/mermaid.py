"""Diagram IR -> Mermaid flowchart text, for a Markdown cell or a README.

JupyterLab (4.1+) and GitHub render a fenced ``mermaid`` block, so a diagram can live in
prose without Graphviz or an image file. The same IR and the same visual grammar as the DOT
renderer: START a small circle, END and final states a double circle, interrupt nodes a
hexagon with the pause mark, conditional edges dotted and labelled with the outcome (or the
event and guard of a machine's transition), a run's overlay as CSS classes
(``current``, ``visited``, ``pending``, ``failed``, ``rejected``) with taken edges counted.

Escaping: node ids are generated (``n0``, ``n1``, ...); every label is quoted, and every
character outside a small safe set becomes a Mermaid entity code (``#60;`` for ``<``), so a
name can never close a label, start a link or inject markup.

Example:
    >>> from agentnb.render.model import Diagram, Edge, Node, NodeKind
    >>> d = Diagram(
    ...     nodes=(Node("START", "", NodeKind.START), Node("plan", "plan", entry=True)),
    ...     edges=(Edge("START", "plan"),),
    ... )
    >>> print(to_mermaid(d))
    flowchart LR
      n0(( ))
      n1("plan")
      n0 --> n1
"""

from __future__ import annotations

import json
import re

from agentnb.render.dot import PAUSE_MARK
from agentnb.render.model import Diagram, Edge, EdgeKind, Node, NodeKind

__all__ = ["to_mermaid"]

_SAFE = re.compile(r"[^A-Za-z0-9 _.,:!?+=@-]")

# overlay state -> (fill, stroke, text colour): the DOT renderer's palette
_CLASSES: dict[str, tuple[str, str, str]] = {
    "visited": ("#d3ecd9", "#3c8d55", "#1d2733"),
    "current": ("#3b7dd8", "#1f5fae", "#ffffff"),
    "pending": ("#f4b740", "#a86b00", "#1d2733"),
    "rejected": ("#f2c4c2", "#9b2c2c", "#1d2733"),
    "failed": ("#d9534f", "#9b2c2c", "#ffffff"),
}


def _label(text: str) -> str:
    """``text`` as a quoted Mermaid label: unsafe characters as entity codes."""
    return '"' + _SAFE.sub(lambda m: f"#{ord(m.group())};", text) + '"'


def _shape(node: Node) -> str:
    if node.kind is NodeKind.START:
        return "(( ))"
    if node.kind is NodeKind.END:
        return "((( )))"
    text = node.label
    if node.pause_before:
        text = f"{PAUSE_MARK} {text}"
    if node.pause_after:
        text = f"{text} {PAUSE_MARK}"
    label = _label(text)
    if node.kind is NodeKind.FINAL:
        return f"((({label})))"
    if node.interrupt:
        return "{{" + label + "}}"
    if node.kind is NodeKind.MISSING:
        return f"[/{label}/]"
    return f"({label})"


def _state(node: Node, diagram: Diagram) -> str | None:
    """The overlay state that colours ``node``, most important first, if any."""
    overlay = diagram.overlay
    if overlay is None or node.kind in (NodeKind.START, NodeKind.END):
        return None
    for state, hit in (
        ("failed", node.id == overlay.failed),
        ("rejected", node.id == overlay.rejected),
        ("pending", node.id == overlay.pending),
        ("current", node.id == overlay.current),
        ("visited", node.id in overlay.visited),
    ):
        if hit:
            return state
    return None


def _taken(edge: Edge, diagram: Diagram) -> int:
    overlay = diagram.overlay
    if overlay is None:
        return 0
    if overlay.keyed and edge.key:
        for s, t, k, n in overlay.keyed:
            if (s, t, k) == (edge.source, edge.target, edge.key):
                return n
        return 0
    return overlay.count(edge.source, edge.target)


def _edge(edge: Edge, names: dict[str, str], diagram: Diagram) -> str:
    taken = _taken(edge, diagram)
    parts = [edge.text] if edge.text else []
    if taken > 1:
        parts.append(f"×{taken}")
    arrow = "-.->" if edge.kind is EdgeKind.CONDITIONAL else "-->"
    if taken:
        arrow = "==>"  # a taken edge is drawn thick, whatever its kind
    label = f"|{_label(' '.join(parts))}|" if parts else ""
    return f"  {names[edge.source]} {arrow}{label} {names[edge.target]}"


def to_mermaid(diagram: Diagram) -> str:
    """The diagram as Mermaid flowchart text (without the Markdown fence)."""
    names = {node.id: f"n{i}" for i, node in enumerate(diagram.nodes)}
    lines = [f"flowchart {diagram.direction}"]
    if diagram.title:  # front matter is YAML, and a JSON string is a YAML string
        lines[:0] = ["---", f"title: {json.dumps(diagram.title, ensure_ascii=False)}", "---"]
    lines += [f"  {names[node.id]}{_shape(node)}" for node in diagram.nodes]
    lines += [_edge(edge, names, diagram) for edge in diagram.edges]
    lit: dict[str, list[str]] = {}
    for node in diagram.nodes:
        state = _state(node, diagram)
        if state is not None:
            lit.setdefault(state, []).append(names[node.id])
    for state, (fill, stroke, colour) in _CLASSES.items():
        if state in lit:
            lines.append(f"  classDef {state} fill:{fill},stroke:{stroke},color:{colour}")
            lines.append(f"  class {','.join(lit[state])} {state}")
    return "\n".join(lines)
