"""Turn workflows, runs, state machines and their instances into the diagram IR.

:func:`diagram_from_graph` reads a :class:`~agentnb.StateGraph` (even one still being built)
or a compiled :class:`~agentnb.Workflow`; :func:`overlay_from_events` replays a run's event
log, so a run recorded by another process draws the same as a live one.
:func:`diagram_for` also draws state machines and their instances, through
:mod:`agentnb.render.extract_machine`; ``agentnb.fsm`` is imported only when one is drawn.

Example:
    >>> from agentnb.graph.builder import END, StateGraph
    >>> g = StateGraph("demo").add_node("a", lambda s: None).add_edge("a", END)
    >>> d = diagram_from_graph(g.set_entry_point("a"))
    >>> [n.id for n in d.nodes], [(e.source, e.target) for e in d.edges]
    (['START', 'a', 'END'], [('START', 'a'), ('a', 'END')])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, TypeAlias

from agentnb.graph.builder import StateGraph
from agentnb.graph.workflow import Workflow
from agentnb.render.extract_machine import (
    diagram_from_instance,
    diagram_from_machine,
    overlay_from_history,
)
from agentnb.render.model import (
    END_ID,
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
from agentnb.render.overlay import OverlayFold
from agentnb.store.records import Event

__all__ = [
    "GraphLike",
    "RunLike",
    "diagram_for",
    "diagram_from_graph",
    "diagram_from_instance",
    "diagram_from_machine",
    "diagram_from_run",
    "overlay_from_events",
    "overlay_from_history",
]

GraphLike: TypeAlias = StateGraph | Workflow


class RunLike(Protocol):
    """What drawing needs from a run (:class:`agentnb.graph.run.Run` has it)."""

    @property
    def workflow(self) -> Workflow: ...

    @property
    def run_id(self) -> str: ...

    @property
    def events(self) -> Sequence[Event]: ...


def diagram_from_graph(
    graph: GraphLike,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
    overlay: Overlay | None = None,
) -> Diagram:
    """The diagram of a workflow, compiled or not.

    An incomplete graph draws what is there: without an entry point there is no start
    marker, and a name used by an edge before its node exists is drawn as a ``missing`` node.

    Args:
        graph: a ``StateGraph`` or a compiled ``Workflow``.
        direction: ``"LR"`` or ``"TB"``.
        title: drawn above; the graph's name when omitted.
        legend: draw a legend; by default only when there is something to explain
            (interrupts, conditional edges, a run overlay).
        overlay: what a run did (see :func:`overlay_from_events`).

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
        >>> from agentnb.render import diagram_from_graph
        >>> diagram = diagram_from_graph(graph.compile(), direction="TB", legend=True)
        >>> diagram.direction, diagram.legend, diagram.overlay is None
        ('TB', True, True)
    """
    defined = list(graph.nodes)
    referenced = _referenced(graph)
    missing = [name for name in referenced if name not in graph.nodes and name != END_ID]
    edges = _edges(graph, defined, missing)

    nodes: list[Node] = []
    clusters: list[Cluster] = []
    if graph.entry is not None:
        nodes.append(Node(START_ID, "", NodeKind.START))
    for name in defined:
        nodes.append(_node(graph, name, NodeKind.NORMAL, graph.nodes[name].description))
    for name in missing:
        nodes.append(_node(graph, name, NodeKind.MISSING, None))
    if any(edge.target == END_ID for edge in edges):
        nodes.append(Node(END_ID, "", NodeKind.END))
    for name in defined:
        if graph.nodes[name].subgraph is not None:
            _nest(graph, name, name, None, nodes, edges, clusters)

    if legend is None:
        legend = (
            overlay is not None
            or any(n.interrupt or n.kind is NodeKind.MISSING for n in nodes)
            or any(e.kind is EdgeKind.CONDITIONAL for e in edges)
        )
    return Diagram(
        nodes=tuple(nodes),
        edges=tuple(edges),
        title=graph.name if title is None else title,
        direction=direction,
        legend=legend,
        overlay=overlay,
        clusters=tuple(clusters),
    )


def _nest(
    graph: GraphLike,
    name: str,
    prefix: str,
    parent: str | None,
    nodes: list[Node],
    edges: list[Edge],
    clusters: list[Cluster],
) -> None:
    """Draw subgraph node ``name`` as a box holding its own graph, names under ``prefix/``.

    The node itself stays (runs light it, and the parent's edges meet it); the subgraph's
    nodes are drawn inside the box after it, entered from it.
    """
    inner = graph.nodes[name].subgraph
    assert inner is not None
    box = f"{prefix}:subgraph"
    clusters.append(Cluster(box, f"{name}: subgraph {inner.name!r}", parent))
    anchor = next(i for i, n in enumerate(nodes) if n.id == prefix)
    nodes[anchor] = dataclasses.replace(nodes[anchor], cluster=box)
    for child, spec in inner.nodes.items():
        nodes.append(
            Node(
                f"{prefix}/{child}",
                child,
                NodeKind.NORMAL,
                pause_before=child in inner.interrupts_before,
                pause_after=child in inner.interrupts_after,
                description=spec.description,
                cluster=box,
            )
        )
    if inner.entry is not None:
        edges.append(Edge(prefix, f"{prefix}/{inner.entry}", key="subgraph"))
    for source, targets in inner.edges.items():
        edges += [Edge(f"{prefix}/{source}", f"{prefix}/{t}") for t in targets if t != END_ID]
    for join in inner.joins:
        if join.target != END_ID:
            edges += [Edge(f"{prefix}/{s}", f"{prefix}/{join.target}") for s in join.sources]
    for source, branch in inner.branches.items():
        for target in dict.fromkeys(branch.targets.values()):
            if target != END_ID:
                edges.append(Edge(f"{prefix}/{source}", f"{prefix}/{target}", EdgeKind.CONDITIONAL))
    for child, spec in inner.nodes.items():
        if spec.subgraph is not None:
            _nest(inner, child, f"{prefix}/{child}", box, nodes, edges, clusters)


def _node(graph: GraphLike, name: str, kind: NodeKind, description: str | None) -> Node:
    return Node(
        name,
        name,
        kind,
        entry=name == graph.entry,
        pause_before=name in graph.interrupts_before,
        pause_after=name in graph.interrupts_after,
        description=description,
    )


def _referenced(graph: GraphLike) -> list[str]:
    """Every name the graph mentions, in a stable order (declaration order, then sorted sets)."""
    names: dict[str, None] = {}
    if graph.entry is not None:
        names[graph.entry] = None
    for source, targets in graph.edges.items():
        names[source] = None
        names.update(dict.fromkeys(targets))
    for join in graph.joins:
        names.update(dict.fromkeys((*join.sources, join.target)))
    for source, branch in graph.branches.items():
        names[source] = None
        names.update(dict.fromkeys(branch.targets.values()))
    names.update(dict.fromkeys(sorted(graph.interrupts_before)))
    names.update(dict.fromkeys(sorted(graph.interrupts_after)))
    return list(names)


def _edges(graph: GraphLike, defined: list[str], missing: list[str]) -> list[Edge]:
    edges: list[Edge] = []
    if graph.entry is not None:
        edges.append(Edge(START_ID, graph.entry))
    for source in [*defined, *missing]:
        branch = graph.branches.get(source)
        if branch is not None:
            edges.extend(_branch_edges(source, branch.targets))
        plain = graph.edges.get(source, ())
        for target in plain:
            # Both a plain and a conditional edge is invalid (compile refuses it), but a
            # graph being built may have both for a moment: draw them apart.
            key = "plain" if branch is not None and target in branch.targets.values() else ""
            edges.append(Edge(source, target, key=key))
        joins = [j for j in graph.joins if source in j.sources]
        for join in joins:
            # A join's edges are labelled with what the target waits for: "b + c".
            label = " + ".join(join.sources)
            edges.append(Edge(source, join.target, label=label, key="join"))
        if not plain and not joins and branch is None and source in graph.nodes:
            edges.append(Edge(source, END_ID, implicit=True))
    return edges


def _branch_edges(source: str, targets: Mapping[str, str]) -> list[Edge]:
    """One dashed edge per target; outcomes leading to the same target share it."""
    outcomes: dict[str, list[str]] = {}
    for outcome, target in targets.items():
        outcomes.setdefault(target, []).append(outcome)
    return [
        Edge(
            source,
            target,
            EdgeKind.CONDITIONAL,
            label=", ".join(names) if any(o != target for o in names) else None,
        )
        for target, names in outcomes.items()
    ]


def overlay_from_events(events: Iterable[Event], graph: GraphLike) -> Overlay:
    """Replay a run's events into an overlay; pure, so any process can draw any run.

    Events about nodes the graph does not have (a run of an older shape) are skipped;
    event types the runtime does not know (custom ``ctx.emit`` types) are ignored. The
    replay is :class:`~agentnb.render.overlay.OverlayFold`, which a live panel feeds one
    batch at a time instead of keeping the whole log.

    Args:
        events: the run's events in ``seq`` order.
        graph: the workflow the run belongs to.

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
        >>> from agentnb.render import overlay_from_events
        >>> workflow = graph.compile()
        >>> run = workflow.start({})
        >>> _ = run.step()
        >>> overlay = overlay_from_events(run.events, workflow)  # any process can replay a log
        >>> overlay.current, overlay.traversed
        ('pay', (('START', 'plan', 1), ('plan', 'pay', 1)))
    """
    return OverlayFold(graph).feed(events).overlay()


def diagram_from_run(
    run: RunLike,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
) -> Diagram:
    """The run's workflow with the run's overlay; the title names the run and its status.

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
        >>> from agentnb.render import diagram_from_run, to_text
        >>> run = graph.compile().start({}, run_id="r1")
        >>> _ = run.step()
        >>> print(to_text(diagram_from_run(run)))
        refund · run r1 · pending: 2 nodes, 3 edges
        ...
        run: pending — awaiting approval at pay
          visited: plan
          taken: START -> plan ×1, plan -> pay ×1
    """
    overlay = overlay_from_events(run.events, run.workflow)
    if title is None:
        status = getattr(run, "status", None) or overlay.status
        title = f"{run.workflow.name} · run {run.run_id}" + (f" · {status}" if status else "")
    return diagram_from_graph(
        run.workflow, direction=direction, title=title, legend=legend, overlay=overlay
    )


def diagram_for(
    obj: object,
    *,
    direction: Direction = "LR",
    title: str | None = None,
    legend: bool | None = None,
) -> Diagram:
    """The diagram of a ``StateGraph``, ``Workflow``, run, ``StateMachine``, machine
    instance or an existing ``Diagram``.

    Raises:
        TypeError: ``obj`` is none of those.

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
    if isinstance(obj, Diagram):
        return obj
    if isinstance(obj, StateGraph | Workflow):
        return diagram_from_graph(obj, direction=direction, title=title, legend=legend)
    workflow = getattr(obj, "workflow", None)
    if isinstance(workflow, Workflow) and hasattr(obj, "events") and hasattr(obj, "run_id"):
        run: RunLike = obj  # type: ignore[assignment]  # checked structurally just above
        return diagram_from_run(run, direction=direction, title=title, legend=legend)
    # Only now: drawing workflows must not need (or pay for) the state-machine package.
    from agentnb.fsm import MachineInstance, Statechart, StateMachine
    from agentnb.render.extract_chart import diagram_from_chart, diagram_from_chart_instance

    if isinstance(obj, StateMachine):
        return diagram_from_machine(obj, direction=direction, title=title, legend=legend)
    if isinstance(obj, Statechart):
        return diagram_from_chart(obj, direction=direction, title=title, legend=legend)
    if isinstance(obj, MachineInstance):  # a flat machine's drawn as one, a chart's as a chart
        if isinstance(obj.machine, StateMachine):
            return diagram_from_instance(obj, direction=direction, title=title, legend=legend)
        return diagram_from_chart_instance(obj, direction=direction, title=title, legend=legend)
    raise TypeError(
        f"cannot draw a {type(obj).__name__}: pass a StateGraph, a Workflow, a run, "
        "a StateMachine or a machine instance"
    )
