"""Compound states drawn as Graphviz clusters, for :func:`agentnb.render.dot.to_dot`.

Each :class:`~agentnb.render.model.Cluster` becomes a ``subgraph cluster_N`` nested in its
parent's, with an ``id``/``class`` Graphviz copies into the SVG (``agentnb-cluster``,
``kind-compound``/``kind-parallel``/``kind-region``, ``is-current`` when active), so a
widget can light the configuration by toggling classes. Regions of a parallel state have
dashed borders. User text goes through the same HTML-label escaping as node labels.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from agentnb.render.model import Cluster, Diagram, Node

__all__ = ["cluster_lines", "cluster_names"]

_BORDER = "#5f7691"
_ACTIVE = "#1f5fae"
_TEXT = "#1d2733"


def cluster_names(diagram: Diagram) -> dict[str, str]:
    """Cluster id -> its generated DOT subgraph name (``cluster_0``, ... in diagram order)."""
    return {c.id: f"cluster_{i}" for i, c in enumerate(diagram.clusters)}


def cluster_lines(
    diagram: Diagram,
    node_line: Callable[[Node], str],
    active_ids: Collection[str],
    prefix: str,
    *,
    html: Callable[[str], str],
    dom_id: Callable[[str], str],
) -> list[str]:
    """The nodes, nested in one ``subgraph cluster_N`` per compound state."""
    subgraphs = cluster_names(diagram)
    inside: dict[str | None, list[Cluster]] = {}
    for cluster in diagram.clusters:
        inside.setdefault(cluster.parent, []).append(cluster)
    members: dict[str | None, list[Node]] = {}
    for node in diagram.nodes:
        members.setdefault(node.cluster, []).append(node)
    lines: list[str] = []

    def emit(parent: str | None, depth: int) -> None:
        pad = "  " * depth
        for node in members.get(parent, []):
            lines.append(pad + node_line(node))
        for cluster in inside.get(parent, []):
            active = cluster.id in active_ids
            classes = ["agentnb-cluster", "kind-parallel" * cluster.parallel or "kind-compound"]
            classes += ["kind-region"] * cluster.region + ["is-current"] * active
            style = "rounded,dashed" if cluster.region else "rounded"
            colour = _ACTIVE if active else _BORDER
            attrs = [
                ("id", f'"{prefix}node-{dom_id(cluster.id)}"'),
                ("class", '"' + " ".join(classes) + '"'),
                ("style", f'"{style}"'),
                ("color", f'"{colour}"'),
                ("penwidth", "2.2" if active else "1.1"),
                ("fontcolor", f'"{_TEXT if not active else colour}"'),
                ("labeljust", "l"),
                ("label", f"<{html(cluster.label)}>"),
            ]
            lines.append(f"{pad}  subgraph {subgraphs[cluster.id]} {{")
            lines.append(f"{pad}    graph [{', '.join(f'{k}={v}' for k, v in attrs)}];")
            emit(cluster.id, depth + 1)
            lines.append(f"{pad}  }}")

    emit(None, 0)
    return lines
