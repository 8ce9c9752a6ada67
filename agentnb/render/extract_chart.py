"""Statecharts and their instances as diagrams: compound states as clusters.

:func:`diagram_from_chart` draws a :class:`~agentnb.fsm.Statechart` in the same visual
grammar as flat machines: atomic and final states are nodes; a compound state is a
cluster around its children, with a small initial dot and an arrow to its initial child;
a parallel state's regions are clusters with dashed borders; history pseudo-states are
circles ``H`` / ``H*``. Transitions are edges labelled with their event (``after 5s`` for
a delayed one, nothing for an eventless one) and ``[cond]``; an edge to or from a compound
state is clipped at its box. :func:`diagram_from_chart_instance` lights the instance's
active configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentnb.render.model import (
    START_ID,
    Cluster,
    Diagram,
    Direction,
    Edge,
    EdgeKind,
    Node,
    NodeKind,
    Overlay,
)

if TYPE_CHECKING:
    from agentnb.fsm.chart import Statechart
    from agentnb.fsm.instance import MachineInstance
    from agentnb.fsm.nodes import ChartTransition
    from agentnb.fsm.nodes import Node as ChartNode
    from agentnb.fsm.trace import Microstep

__all__ = [
    "diagram_from_chart",
    "diagram_from_chart_instance",
    "initial_id",
    "microstep_diagrams",
]


def initial_id(state_id: str) -> str:
    """Id of the initial dot inside a compound state's cluster (``#`` is never in an id)."""
    return f"{state_id}#initial"


def _boxed(node: ChartNode) -> bool:
    return node.is_compound or node.kind == "parallel"


def _label(chart: Statechart, t: ChartTransition) -> str | None:
    if not t.events:
        return None
    delays = getattr(chart, "delays", {})
    return " ".join(f"after {delays[e]:g}s" if e in delays else e for e in t.events)


def _edges(chart: Statechart, t: ChartTransition) -> list[Edge]:
    source = t.source
    tail = initial_id(source.id) if _boxed(source) else source.id
    cond = t.cond.text if t.cond is not None else None
    kind = EdgeKind.CONDITIONAL if cond is not None else EdgeKind.PLAIN
    label = _label(chart, t)
    targets = t.target_nodes or (source,)  # a targetless transition: a loop on its source
    edges = []
    for n, target in enumerate(targets):
        head = initial_id(target.id) if _boxed(target) else target.id
        inside = target is source or target.is_descendant_of(source)
        around = source.is_descendant_of(target)
        edges.append(
            Edge(
                tail,
                head,
                kind,
                label=label if t.target_nodes else f"{label or ''} ⟲".strip(),
                guard=cond,
                key=f"t{t.order}.{n}",
                tail_cluster=source.id if _boxed(source) and not inside else None,
                head_cluster=target.id if _boxed(target) and not around else None,
            )
        )
    return edges


def diagram_from_chart(
    chart: Statechart,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
    overlay: Overlay | None = None,
) -> Diagram:
    """The diagram of a statechart: its state tree as nested clusters, its transitions.

    Example:
        >>> from agentnb.fsm import State, Statechart
        >>> chart = Statechart("c", [State("on", states=[State("a"), State("b")]), State("off")])
        >>> d = diagram_from_chart(chart)
        >>> [c.id for c in d.clusters], [n.id for n in d.nodes]
        (['on'], ['START', 'on#initial', 'a', 'b', 'off'])
    """
    nodes = [Node(START_ID, "", NodeKind.START)]
    clusters: list[Cluster] = []
    edges: list[Edge] = []
    root = chart.root
    for target in root.initial.target_nodes if root.initial else ():
        head_boxed = _boxed(target)
        edges.append(
            Edge(
                START_ID,
                initial_id(target.id) if head_boxed else target.id,
                key=f"start.{target.id}",
                head_cluster=target.id if head_boxed else None,
            )
        )
    for node in chart.nodes.values():  # document order: parents before children
        parent = node.parent
        where = None if parent is None or parent.kind == "scxml" else parent.id
        if _boxed(node):
            region = parent is not None and parent.kind == "parallel"
            clusters.append(Cluster(node.id, node.id, where, node.kind == "parallel", region))
            marker = NodeKind.INITIAL if node.is_compound else NodeKind.ANCHOR
            nodes.append(Node(initial_id(node.id), "", marker, cluster=node.id))
            if node.is_compound and node.initial is not None:
                for child in node.initial.target_nodes:
                    boxed = _boxed(child)
                    edges.append(
                        Edge(
                            initial_id(node.id),
                            initial_id(child.id) if boxed else child.id,
                            key=f"initial.{child.id}",
                            head_cluster=child.id if boxed else None,
                        )
                    )
        elif node.kind == "history":
            label = "H*" if node.deep else "H"
            nodes.append(Node(node.id, label, NodeKind.HISTORY, cluster=where))
        else:
            kind = NodeKind.FINAL if node.kind == "final" else NodeKind.NORMAL
            nodes.append(Node(node.id, node.id, kind, cluster=where))
    for t in chart.transitions():
        edges += _edges(chart, t)
    if legend is None:
        legend = overlay is not None or any(e.kind is EdgeKind.CONDITIONAL for e in edges)
    return Diagram(
        nodes=tuple(nodes),
        edges=tuple(edges),
        title=chart.name if title is None else title,
        direction=direction,
        legend=legend,
        overlay=overlay,
        clusters=tuple(clusters),
        machine=True,
    )


def diagram_from_chart_instance(
    instance: MachineInstance,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
) -> Diagram:
    """The instance's chart with its active configuration lit (atomic states and boxes)."""
    chart = instance.chart
    status = "completed" if instance.is_final else "running"
    configuration = instance.configuration
    active = tuple(i for i in chart.nodes if i in configuration)
    overlay = Overlay(status=status, active=active, visited=())
    if title is None:
        title = f"{chart.name} · instance {instance.id} · {status}"
    return diagram_from_chart(
        chart, direction=direction, title=title, legend=legend, overlay=overlay
    )


def _step_title(chart: Statechart, number: int, step: Microstep, starting: bool) -> str:
    """``starting``: the microsteps are the instance's start (its first one has no event):
    the first is the start itself, not a microstep "on" an event nobody sent."""
    event = repr(step.event or "eventless")
    if starting:
        head = "start of the instance" if number == 1 else f"microstep {number} of the start"
        parts = [f"{chart.name} · {head}" + (f" on {event}" if number > 1 else "")]
    else:
        parts = [f"{chart.name} · microstep {number} on {event}"]
    if step.exited:
        parts.append(f"exit {', '.join(step.exited)}")
    if step.entered:
        parts.append(f"enter {', '.join(step.entered)}")
    if step.preempted:
        parts.append(f"preempted {len(step.preempted)}")
    return " · ".join(parts)


def microstep_diagrams(
    chart: Statechart, steps: list[Microstep], *, direction: Direction = "LR"
) -> list[Diagram]:
    """One diagram per microstep (``instance.microsteps``): what the algorithm did, lit.

    The taken transitions are drawn as traversed (and last), the states the microstep exited
    are tinted as visited, and the configuration after it is lit; the title lists the exit
    and entry sets. Showing them one after the other steps through a macrostep.
    """
    base = diagram_from_chart(chart, direction=direction, legend=True)
    by_order = {t.order: t for t in chart.transitions()}
    starting = bool(steps) and steps[0].event is None
    diagrams = []
    for number, step in enumerate(steps, 1):
        keyed = []
        for order in step.transitions:
            t = by_order.get(order)
            if t is not None:
                keyed += [(e.source, e.target, e.key, 1) for e in _edges(chart, t)]
        overlay = Overlay(
            status="running",
            active=tuple(step.configuration),
            visited=tuple(step.exited),
            traversed=tuple((s, t, n) for s, t, _, n in keyed),
            keyed=tuple(keyed),
            last=(keyed[-1][0], keyed[-1][1]) if keyed else None,
            last_key=keyed[-1][2] if keyed else None,
        )
        diagrams.append(
            Diagram(
                nodes=base.nodes,
                edges=base.edges,
                title=_step_title(chart, number, step, starting),
                direction=direction,
                legend=True,
                overlay=overlay,
                clusters=base.clusters,
                machine=True,
            )
        )
    return diagrams
