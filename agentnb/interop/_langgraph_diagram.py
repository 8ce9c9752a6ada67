"""A compiled LangGraph graph as agentnb's one diagram model (:mod:`agentnb.render.model`).

Read from LangGraph's own ``get_graph()``: its nodes, its edges, each conditional edge
labelled with the outcome of the path map that leads along it. Two things ``get_graph()``
cannot say are taken from the graph's builder:

* a router added without a path map (``add_conditional_edges("b", route)``): LangGraph
  cannot know its targets and draws a guess (an edge to ``__end__``, or to every node);
  here its edges are one dashed edge to an *unknown targets* node, never a guess;
* joins (``add_edge(["a", "b"], "c")``): their edges are labelled with what the target
  waits for (``a + b``), as agentnb labels its own;
* interrupts: ``interrupt_before`` / ``interrupt_after`` given at compile time mark their
  nodes, as agentnb's own interrupts are marked.

A node that is itself a compiled graph (a subgraph) is drawn as a box holding that graph,
named as agentnb names a subgraph's nodes (``node/inner``, cluster ``node:subgraph``), so
the panel folds and unfolds it like its own.
"""

from __future__ import annotations

from typing import Any

from agentnb.render.model import END_ID, START_ID, Cluster, Diagram, Edge, EdgeKind, Node, NodeKind

__all__ = ["LG_END", "LG_START", "UNKNOWN", "diagram_of", "pathless_routers", "subgraphs_of"]

LG_START, LG_END = "__start__", "__end__"
UNKNOWN = ":unknown"
"""How the *unknown targets* node of router source ``n`` is named (``n:unknown``)."""


def _is_graph(value: Any) -> bool:
    from langgraph.pregel import Pregel

    return isinstance(value, Pregel)


def subgraphs_of(graph: Any) -> dict[str, Any]:
    """The nodes of ``graph`` that are compiled graphs themselves, by name."""
    found: dict[str, Any] = {}
    builder = getattr(graph, "builder", None)
    for name, spec in getattr(builder, "nodes", {}).items():
        runnable = getattr(spec, "runnable", None)
        if _is_graph(runnable):
            found[name] = runnable
    return found


def pathless_routers(graph: Any) -> dict[str, list[str]]:
    """Source node -> the names of its routers added without a path map."""
    found: dict[str, list[str]] = {}
    builder = getattr(graph, "builder", None)
    for source, branches in getattr(builder, "branches", {}).items():
        for name, branch in branches.items():
            if getattr(branch, "ends", None) is None:
                found.setdefault(source, []).append(name)
    return found


def interrupts_of(graph: Any, which: str) -> set[str] | str:
    """``graph.interrupt_before_nodes`` (``which="before"``) or after: ``"*"`` or names."""
    value = getattr(graph, f"interrupt_{which}_nodes", ()) or ()
    return "*" if value == "*" else set(value)


def _marker(name: str, prefix: str) -> str:
    if name == LG_START:
        return START_ID if not prefix else prefix.removesuffix("/")
    if name == LG_END:
        return END_ID if not prefix else ""
    return f"{prefix}{name}"


def diagram_of(graph: Any, *, title: str | None = None, legend: bool = True) -> Diagram:
    """The diagram of compiled LangGraph ``graph`` (see the module docstring).

    Example:
        >>> from langgraph.graph import StateGraph, START, END  # doctest: +SKIP
        >>> diagram_of(app).edges  # doctest: +SKIP
    """
    nodes: list[Node] = [Node(START_ID, "", NodeKind.START)]
    edges: list[Edge] = []
    clusters: list[Cluster] = []
    _add(graph, "", None, nodes, edges, clusters)
    if any(e.target == END_ID for e in edges):
        nodes.append(Node(END_ID, "", NodeKind.END))
    return Diagram(
        nodes=tuple(nodes),
        edges=tuple(edges),
        title=title if title is not None else (getattr(graph, "name", None) or "LangGraph"),
        legend=legend,
        clusters=tuple(clusters),
    )


def _add(
    graph: Any,
    prefix: str,
    box: str | None,
    nodes: list[Node],
    edges: list[Edge],
    clusters: list[Cluster],
) -> None:
    """Draw ``graph``'s nodes and edges under ``prefix`` (inside cluster ``box``)."""
    drawn = graph.get_graph()
    before, after = interrupts_of(graph, "before"), interrupts_of(graph, "after")
    inner = subgraphs_of(graph)
    pathless = pathless_routers(graph)
    entry = {e.target for e in drawn.edges if e.source == LG_START}
    joins = {
        (source, target): " + ".join(sources)
        for sources, target in getattr(graph.builder, "waiting_edges", ())
        for source in sources
    }
    for name in drawn.nodes:
        if name in (LG_START, LG_END):
            continue
        nodes.append(
            Node(
                f"{prefix}{name}",
                name,
                NodeKind.NORMAL,
                entry=name in entry and not prefix,
                pause_before=before == "*" or name in before,
                pause_after=after == "*" or name in after,
                cluster=box,
            )
        )
    # Outcomes leading to the same target share one dashed edge, labelled with all of them.
    conditional: dict[tuple[str, str], list[str]] = {}
    for e in drawn.edges:
        if (e.source in pathless and e.conditional) or (e.source in pathless and _guess(graph, e)):
            continue  # LangGraph's guess at a router it cannot read: drawn below instead
        source, target = _marker(e.source, prefix), _marker(e.target, prefix)
        if not target:
            continue  # a subgraph's own end: the parent's edges leave the subgraph's node
        if e.conditional:
            outcome = str(e.data) if e.data is not None else e.target
            conditional.setdefault((source, target), []).append(outcome)
        elif (e.source, e.target) in joins:  # a join: labelled with what the target waits for
            edges.append(Edge(source, target, label=joins[e.source, e.target], key="join"))
        else:
            edges.append(
                Edge(source, target, key="subgraph" if prefix and e.source == LG_START else "")
            )
    for (source, target), outcomes in conditional.items():
        named = target.rpartition("/")[2]
        label = ", ".join(outcomes) if any(o != named and o != LG_END for o in outcomes) else None
        edges.append(Edge(source, target, EdgeKind.CONDITIONAL, label=label))
    for source, routers in pathless.items():
        unknown = f"{prefix}{source}{UNKNOWN}"
        nodes.append(
            Node(
                unknown,
                "unknown targets",
                NodeKind.MISSING,
                description=f"{', '.join(routers)} has no path map: where it leads is known "
                "only when it runs (give add_conditional_edges a path map to draw it)",
                cluster=box,
            )
        )
        edges.append(
            Edge(f"{prefix}{source}", unknown, EdgeKind.CONDITIONAL, label=" ".join(routers))
        )
    for name, sub in inner.items():
        anchor = f"{prefix}{name}"
        cluster = f"{anchor}:subgraph"
        clusters.append(Cluster(cluster, f"{name}: subgraph {getattr(sub, 'name', name)!r}", box))
        at = next(i for i, n in enumerate(nodes) if n.id == anchor)
        nodes[at] = Node(
            anchor,
            name,
            NodeKind.NORMAL,
            entry=nodes[at].entry,
            pause_before=nodes[at].pause_before,
            pause_after=nodes[at].pause_after,
            cluster=cluster,
        )
        _add(sub, f"{anchor}/", cluster, nodes, edges, clusters)


def _guess(graph: Any, edge: Any) -> bool:
    """Whether ``edge`` from a pathless router's source is not one of its plain edges."""
    plain: set[tuple[str, str]] = getattr(graph.builder, "edges", set())
    return (edge.source, edge.target) not in plain
