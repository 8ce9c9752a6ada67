"""The diagram IR: what every renderer draws, whatever it came from.

A workflow, a state machine and a run all become a :class:`Diagram` — nodes, edges, an
optional :class:`Overlay` of what a run did — and renderers (DOT, text) only ever read this.
Keeping the IR free of graph and machine types is what lets one visual grammar serve both.

A state machine maps onto the same IR: each state is a ``Node`` (``FINAL`` for final
states), the initial state is ``entry`` with an edge from the ``START`` marker, each
transition an ``Edge`` with ``label`` = event name, ``guard`` = its condition and ``key`` =
the event (so several transitions between two states stay apart); the current state is
``Overlay.current`` and the last transition ``Overlay.last``.

Example:
    >>> d = Diagram(
    ...     nodes=(Node("START", "", NodeKind.START), Node("plan", "plan", entry=True)),
    ...     edges=(Edge("START", "plan"),),
    ... )
    >>> [n.id for n in d.nodes], d.direction
    (['START', 'plan'], 'LR')
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Literal

from agentnb.errors import DefinitionError

__all__ = [
    "END_ID",
    "START_ID",
    "Cluster",
    "Diagram",
    "Direction",
    "Edge",
    "EdgeKind",
    "Node",
    "NodeKind",
    "Overlay",
]

START_ID = "START"
"""Id of the start marker (the workflow's ``START`` pseudo-node)."""
END_ID = "END"
"""Id of the end marker (the workflow's ``END`` pseudo-node)."""

Direction = Literal["LR", "TB"]


class NodeKind(StrEnum):
    """What a node is; decides its shape. Interrupts and entry are flags on top of it.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> from agentnb.render import diagram_for
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> [(node.id, str(node.kind)) for node in diagram_for(door).nodes]
        [('START', 'start'), ('closed', 'normal'), ('open', 'final')]
    """

    START = "start"
    """The marker a run enters from."""
    END = "end"
    """The marker a run leaves to."""
    NORMAL = "normal"
    """A node of the workflow (or a state of a machine)."""
    FINAL = "final"
    """A state machine's final state: a real state that nothing leaves."""
    MISSING = "missing"
    """Referenced by an edge or the entry point but not defined (a graph still being built)."""
    HISTORY = "history"
    """A statechart's history pseudo-state (``H``, or ``H*`` when deep)."""
    INITIAL = "initial"
    """The initial pseudo-state inside a compound state: where its initial arrow starts."""
    ANCHOR = "anchor"
    """An invisible point inside a parallel state's box, where its edges attach."""


class EdgeKind(StrEnum):
    """How an edge is taken: always (plain), or when a router or guard picks it.

    Example:
        >>> from agentnb.render import EdgeKind
        >>> [str(kind) for kind in EdgeKind]
        [...'plain'...'conditional'...]
    """

    PLAIN = "plain"
    CONDITIONAL = "conditional"


@dataclass(frozen=True, slots=True)
class Node:
    """A node of the diagram.

    Attributes:
        id: unique within the diagram; the node's name (``START``/``END`` for the markers).
        label: the text drawn, verbatim (renderers escape it).
        kind: decides the shape.
        entry: runs start here.
        pause_before: a run pauses for approval before this node runs.
        pause_after: a run pauses for approval after this node runs.
        description: optional longer text (a tooltip in SVG, a line in text output).

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
        >>> from agentnb.render import diagram_for
        >>> pay = next(node for node in diagram_for(graph).nodes if node.id == "pay")
        >>> pay.kind, pay.pause_before
        (<NodeKind.NORMAL: 'normal'>, True)
    """

    id: str
    label: str
    kind: NodeKind = NodeKind.NORMAL
    entry: bool = False
    pause_before: bool = False
    pause_after: bool = False
    description: str | None = None
    cluster: str | None = None
    """The compound state (a ``Cluster`` id) drawn around this node, if any."""

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind that applies, most specific last: ``('normal', 'entry', 'interrupt_before')``.

        These become CSS classes (``kind-<k>``) on the SVG node.
        """
        extra = (
            ("entry",) * self.entry
            + ("interrupt_before",) * self.pause_before
            + ("interrupt_after",) * self.pause_after
        )
        return (self.kind.value, *extra)

    @property
    def interrupt(self) -> bool:
        """True when a run can pause at this node."""
        return self.pause_before or self.pause_after


@dataclass(frozen=True, slots=True)
class Edge:
    """An edge of the diagram.

    Attributes:
        source: id of the node it leaves.
        target: id of the node it enters.
        kind: plain (always taken) or conditional (a router outcome or a guarded transition).
        label: text drawn on the edge (the outcome or the machine's event name), or ``None``.
        guard: a state machine's guard, drawn as ``[guard]`` after the label.
        key: tells apart several edges between the same two nodes (machines); ``""`` if unique.
        implicit: not declared: a workflow node without an edge goes to ``END``.

    Example:
        >>> from agentnb import END, StateGraph
        >>> from agentnb.render import diagram_for
        >>> graph = (
        ...     StateGraph("route")
        ...     .add_node("plan", lambda state: {})
        ...     .add_node("review", lambda state: {})
        ...     .set_entry_point("plan")
        ...     .add_conditional_edge("plan", lambda state: "big", {"big": "review", "small": END})
        ... )
        >>> edges = [edge for edge in diagram_for(graph).edges if edge.source == "plan"]
        >>> [(edge.target, str(edge.kind), edge.label) for edge in edges]
        [('review', 'conditional', 'big'), ('END', 'conditional', 'small')]
    """

    source: str
    target: str
    kind: EdgeKind = EdgeKind.PLAIN
    label: str | None = None
    guard: str | None = None
    key: str = ""
    implicit: bool = False
    tail_cluster: str | None = None
    """The edge leaves this cluster (a compound state), not just its ``source`` anchor."""
    head_cluster: str | None = None
    """The edge enters this cluster (a compound state), not just its ``target`` anchor."""

    @property
    def text(self) -> str | None:
        """The label and guard as drawn, or ``None`` when the edge carries no text."""
        guard = f"[{self.guard}]" if self.guard else ""
        text = " ".join(t for t in (self.label, guard) if t)
        return text or None


@dataclass(frozen=True, slots=True)
class Overlay:
    """What a run did, drawn over its workflow.

    Attributes:
        status: the run's status as far as the events tell (``running``, ``pending``, ...).
        current: the node running or about to run (``END`` once the run reached the end).
        visited: nodes that started at least once, in order of first visit.
        traversed: ``(source, target, count)`` for every edge taken, in order of first use.
        pending: the node awaiting approval.
        failed: the node that raised.
        rejected: the node whose approval was refused.
        error: ``"Type: message"`` of the failure, for text output.
        last: the edge taken last (a machine's last transition).
        keyed: ``(source, target, key, count)`` when parallel edges must be told apart (a
            machine's transitions between the same two states); drawing prefers it.
        last_key: the key of the edge taken last, with ``keyed``.
        active: the nodes of a superstep, when several run (or run next) at once.
        waiting: the joins still waiting, with how many of their sources have arrived.

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
        >>> from agentnb.render import diagram_from_run
        >>> run = graph.compile().start({}, run_id="r1")
        >>> _ = run.step()
        >>> overlay = diagram_from_run(run).overlay
        >>> overlay.status, overlay.current, overlay.visited, overlay.pending
        ('pending', 'pay', ('plan',), 'pay')
    """

    status: str | None = None
    current: str | None = None
    visited: tuple[str, ...] = ()
    traversed: tuple[tuple[str, str, int], ...] = ()
    pending: str | None = None
    failed: str | None = None
    rejected: str | None = None
    error: str | None = None
    last: tuple[str, str] | None = None
    keyed: tuple[tuple[str, str, str, int], ...] = ()
    last_key: str | None = None
    active: tuple[str, ...] = ()
    """Every node lit at once: the states of a statechart's configuration (nodes and clusters),
    or the tasks of a workflow's superstep when several run (or run next) together."""
    waiting: tuple[tuple[str, int, int], ...] = ()
    """``(join target, sources arrived, sources in all)`` for each join still waiting."""

    @property
    def completed(self) -> bool:
        """True when the run completed: its visited nodes and traversed edges are its path."""
        return self.status == "completed"

    def count(self, source: str, target: str) -> int:
        """How many times the run took the edge ``source -> target``."""
        for s, t, n in self.traversed:
            if (s, t) == (source, target):
                return n
        return 0


@dataclass(frozen=True, slots=True)
class Cluster:
    """A compound or parallel state of a statechart, drawn as a box around its children.

    Attributes:
        id: the state's id (unique among clusters and nodes).
        label: the text drawn at the top of the box.
        parent: the enclosing cluster, or ``None`` at the top.
        parallel: its children are regions, drawn with dashed borders.
        region: it is a region of a parallel state.
    """

    id: str
    label: str
    parent: str | None = None
    parallel: bool = False
    region: bool = False


@dataclass(frozen=True, slots=True)
class Diagram:
    """A whole diagram: nodes, edges and (for a run) an overlay.

    Node ids are unique and every edge joins two nodes of the diagram; breaking either
    raises :class:`~agentnb.errors.DefinitionError` (extractors never do).

    Attributes:
        nodes: in drawing order (the order decides ties in the layout, so keep it stable).
        edges: in drawing order.
        title: drawn above the diagram.
        direction: ``"LR"`` (left to right) or ``"TB"`` (top to bottom).
        legend: draw a legend of the kinds that appear.
        overlay: what a run did, or ``None`` for a bare workflow.
        machine: a state machine's diagram: its nodes are states, its edges transitions,
            and an overlay says which state the instance is *in* (not which node runs next).

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
        >>> from agentnb.render import diagram_for
        >>> diagram = diagram_for(graph)
        >>> [node.id for node in diagram.nodes]
        ['START', 'plan', 'pay', 'END']
        >>> [(edge.source, edge.target) for edge in diagram.edges]
        [('START', 'plan'), ('plan', 'pay'), ('pay', 'END')]
    """

    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    title: str | None = None
    direction: Direction = "LR"
    legend: bool = False
    overlay: Overlay | None = None
    machine: bool = False
    clusters: tuple[Cluster, ...] = ()
    """Compound states around nodes (statecharts), parents before children."""
    _index: dict[str, Node] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.direction not in ("LR", "TB"):
            raise DefinitionError(
                f"direction must be 'LR' or 'TB', not {self.direction!r}",
                culprit="direction",
                fix="Use 'LR' (left to right) or 'TB' (top to bottom).",
            )
        index: dict[str, Node] = {}
        for node in self.nodes:
            if node.id in index:
                raise DefinitionError(f"diagram node {node.id!r} appears twice", culprit=node.id)
            index[node.id] = node
        seen: set[tuple[str, str, str]] = set()
        for edge in self.edges:
            for end in (edge.source, edge.target):
                if end not in index:
                    raise DefinitionError(
                        f"diagram edge {edge.source!r} -> {edge.target!r} names an unknown "
                        f"node {end!r}",
                        culprit=end,
                    )
            key = (edge.source, edge.target, edge.key)
            if key in seen:
                raise DefinitionError(
                    f"diagram edge {edge.source!r} -> {edge.target!r} appears twice",
                    culprit=edge.source,
                    fix="Give parallel edges distinct keys.",
                )
            seen.add(key)
        known: set[str] = set()
        for cluster in self.clusters:
            if cluster.id in known or cluster.id in index:
                raise DefinitionError(
                    f"diagram cluster {cluster.id!r} appears twice", culprit=cluster.id
                )
            if cluster.parent is not None and cluster.parent not in known:
                raise DefinitionError(
                    f"diagram cluster {cluster.id!r} names an unknown parent {cluster.parent!r}",
                    culprit=cluster.id,
                    fix="List parent clusters before their children.",
                )
            known.add(cluster.id)
        for node in self.nodes:
            if node.cluster is not None and node.cluster not in known:
                raise DefinitionError(
                    f"diagram node {node.id!r} names an unknown cluster {node.cluster!r}",
                    culprit=node.id,
                )
        object.__setattr__(self, "_index", index)

    def node(self, node_id: str) -> Node | None:
        """The node with this id, or ``None``."""
        return self._index.get(node_id)

    def with_overlay(self, overlay: Overlay | None) -> Diagram:
        """The same diagram with another overlay."""
        return replace(self, overlay=overlay)
