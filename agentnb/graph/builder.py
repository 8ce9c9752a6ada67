"""``StateGraph``: declare nodes, edges, branches and interrupts, then ``compile()``.

Mistakes are reported as :class:`~agentnb.errors.DefinitionError` naming the culprit and the
fix — obvious ones (a duplicate name) as soon as they are made, structural ones (an edge to a
node that does not exist, a node nothing reaches) when compiling.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, cast

from agentnb._display import Drawable
from agentnb.errors import DefinitionError
from agentnb.graph.nodes import (
    Branch,
    Join,
    NodeFn,
    NodeSpec,
    Router,
    function_node,
    run_subgraph,
)
from agentnb.graph.state import DEFAULT_REDUCERS, Reducer, defaults_of, reducers_of
from agentnb.resilience import CircuitBreaker, Retry
from agentnb.store.policy import ApproverPolicy, PolicyCheck, declare

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow
    from agentnb.identity import IdentityProvider
    from agentnb.store.base import Checkpointer

__all__ = ["END", "START", "Branch", "Join", "NodeSpec", "StateGraph"]

START = "START"
"""Pseudo-node before the entry point: ``add_edge(START, "plan")`` sets the entry point."""
END = "END"
"""Pseudo-node after the last node: ``add_edge("refund", END)``. A node with no edge ends too."""

RESERVED = frozenset({START, END, "__start__", "__end__"})
SPELLED: dict[str, str] = {"__start__": START, "__end__": END}
"""LangGraph's values of ``START`` and ``END``, which its users also type as strings."""


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise DefinitionError(
            f"{what} name must be a non-empty string, not {name!r}",
            culprit=repr(name),
            fix="Name it with a short string such as 'planner'.",
        )
    if name in RESERVED:
        raise DefinitionError(
            f"{name!r} is reserved",
            culprit=name,
            fix=f"Reserved names ({', '.join(sorted(RESERVED))}) mark where a run starts and "
            "ends; pick another name.",
        )
    return name


def _name_of(fn: object) -> str:
    """The name ``add_node(fn)`` gives a node: the function's, or the subgraph's."""
    graph = _subgraph_of(fn)
    name = graph.name if graph is not None else getattr(fn, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise DefinitionError(
            f"add_node({fn!r}): this node has no name of its own to go by",
            culprit=repr(fn),
            fix='Name it: add_node("name", fn).',
        )
    return name


def _subgraph_of(fn: object) -> StateGraph | None:
    if isinstance(fn, StateGraph):
        return fn
    graph = getattr(fn, "graph", None)  # a compiled Workflow keeps its StateGraph
    return graph if isinstance(graph, StateGraph) and hasattr(fn, "checkpointer") else None


class StateGraph(Drawable):
    """A workflow graph under construction.

    Args:
        name: shown in diagrams and run listings; also stored with each run.
        reducers: per-key merge functions ``reducer(current, new)``; ``messages`` appends
            by default and every other key is replaced.
        max_steps: the most nodes one run may execute, unless ``compile()`` says otherwise.

    Example:
        >>> g = StateGraph("hello")
        >>> g.add_node("greet", lambda state: {"greeting": f"hi {state['name']}"})
        StateGraph('hello', nodes=['greet'])
        >>> wf = g.set_entry_point("greet").compile()
        >>> [str(e.type) for e in wf.stream({"name": "Ada"})]
        ['run_started', 'node_start', 'state_update', 'completed']
    """

    def __init__(
        self,
        name: str | type = "workflow",
        *,
        reducers: Mapping[str, Reducer] | None = None,
        max_steps: int = 25,
    ) -> None:
        declared: dict[str, Reducer] = {}
        self.defaults: dict[str, Any] = {}
        """What each reducer key of the schema holds before it is written (``[]``, ``0``)."""
        if isinstance(name, type):  # LangGraph's StateGraph(State): reducers from the schema
            declared = reducers_of(name)
            self.defaults, name = defaults_of(name), name.__name__
        self.name = _check_name(name, "graph")
        self.max_steps = max_steps
        self.reducers: dict[str, Reducer] = {**DEFAULT_REDUCERS, **declared, **(reducers or {})}
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: dict[str, list[str]] = {}
        """Plain edges: each source's targets, in declaration order (several fan out)."""
        self.joins: list[Join] = []
        self.branches: dict[str, Branch] = {}
        self.entry: str | None = None
        self.interrupts_before: set[str] = set()
        self.interrupts_after: set[str] = set()
        self.policies: dict[str, tuple[ApproverPolicy, PolicyCheck | None]] = {}
        """Approver policies by interrupt, keyed ``"before:NODE"`` / ``"after:NODE"``."""

    def __repr__(self) -> str:
        return f"StateGraph({self.name!r}, nodes={list(self.nodes)})"

    def add_node(
        self,
        name: str | NodeFn,
        fn: NodeFn | None = None,
        *,
        description: str | None = None,
        timeout: float | None = None,
        retry: Retry | int | None = None,
        breaker: CircuitBreaker | None = None,
        input_keys: Sequence[str] | None = None,
        output_keys: Sequence[str] | None = None,
    ) -> Self:
        """Add a node: ``fn(state)`` or ``fn(state, ctx)``, sync or async, returning a delta.

        ``fn`` may also be a graph (a ``StateGraph`` or a compiled ``Workflow``): a
        *subgraph*. It runs as a run of its own, nested under this one in the same store
        (``run.children()``), on the parent's state (or only ``input_keys``); when it ends,
        the keys it changed (or only ``output_keys``) come back as this node's delta.
        An interrupt inside it pauses the parent, and is decided from the parent.

        ``add_node(fn)`` (LangGraph's short form) names the node after the function
        (``fn.__name__``), or after the graph for a subgraph.

        Args:
            name: unique within the graph.
            fn: the node's function, or a graph.
            description: shown in diagrams.
            timeout: seconds an attempt may take before it is cancelled.
            retry: a :class:`~agentnb.resilience.Retry` policy, or a number of attempts.
            breaker: a :class:`~agentnb.resilience.CircuitBreaker` shared by the nodes that
                call the same dependency.
        """
        if fn is None:
            fn = cast(NodeFn, name)
            name = _name_of(fn)
        if not isinstance(name, str):
            raise DefinitionError(
                f"add_node({name!r}, ...): the first argument is the node's name",
                culprit=repr(name),
                fix='Write add_node("name", fn), or add_node(fn) to name it after fn.',
            )
        _check_name(name, "node")
        if name in self.nodes:
            raise DefinitionError(
                f"node {name!r} is already defined",
                culprit=name,
                fix="Give each node a unique name.",
            )
        subgraph = _subgraph_of(fn)
        if subgraph is not None:
            if subgraph is self:
                raise DefinitionError(
                    f"node {name!r}: a graph cannot be a node of itself",
                    culprit=name,
                    fix="Build the inner graph separately.",
                )
            self.nodes[name] = NodeSpec(
                name,
                run_subgraph,
                False,
                True,
                description or f"subgraph {subgraph.name!r}",
                subgraph=subgraph,
                input_keys=None if input_keys is None else tuple(input_keys),
                output_keys=None if output_keys is None else tuple(output_keys),
            )
            return self
        if input_keys is not None or output_keys is not None:
            raise DefinitionError(
                f"node {name!r}: input_keys/output_keys apply to subgraphs only",
                culprit=name,
                fix="Pass a StateGraph or Workflow as the node, or drop the keys.",
            )
        self.nodes[name] = function_node(name, fn, description, timeout, retry, breaker)
        return self

    def add_sequence(self, nodes: Sequence[NodeFn | tuple[str, NodeFn]]) -> Self:
        """Add nodes that run one after the other (LangGraph's ``add_sequence``).

        Each item is a function (named after itself) or a ``(name, fn)`` pair; an edge
        leads from each to the next.
        """
        names = []
        for item in nodes:
            if isinstance(item, tuple):
                self.add_node(*item)
                names.append(item[0])
            else:
                self.add_node(item)
                names.append(list(self.nodes)[-1])
        for source, target in itertools.pairwise(names):
            self.add_edge(source, target)
        return self

    def set_entry_point(self, name: str) -> Self:
        """The node a run starts at (``add_edge(START, name)`` says the same).

        A run has one entry node: to start with several branches, let it fan out.
        """
        if self.entry is not None and self.entry != name:
            raise DefinitionError(
                f"the entry point is already {self.entry!r}; a run starts at one node, "
                f"not at {self.entry!r} and {name!r}",
                culprit=name,
                fix=f"Fan out from the entry node instead: add_edge({self.entry!r}, {name!r}).",
            )
        self.entry = name
        return self

    def set_finish_point(self, name: str) -> Self:
        """After ``name`` runs, the run ends (LangGraph's spelling of ``add_edge(name, END)``)."""
        return self.add_edge(name, END)

    def add_edge(self, source: str | Sequence[str], target: str) -> Self:
        """After ``source`` runs, go to ``target`` (a node or ``END``).

        Several edges from one node fan out: all their targets run in the next superstep,
        concurrently. A list of sources is a join: ``add_edge(["b", "c"], "d")`` runs ``d``
        once, after both ``b`` and ``c`` have run.
        """
        source = SPELLED.get(source, source) if isinstance(source, str) else source
        target = SPELLED.get(target, target)
        if source == START:
            return self.set_entry_point(target)
        if not isinstance(source, str):
            if isinstance(source, Sequence) and all(isinstance(s, str) for s in source):
                sources = tuple(dict.fromkeys(source))
                if len(sources) == 1:
                    return self.add_edge(sources[0], target)
                if sources:
                    join = Join(sources, target)
                    if join not in self.joins:
                        self.joins.append(join)
                    return self
            raise DefinitionError(
                f"the source of an edge must be a node name or a list of them, not {source!r}",
                culprit=repr(source),
                fix='Write add_edge("a", "b"), or add_edge(["a", "b"], "c") for a join.',
            )
        targets = self.edges.setdefault(source, [])
        if target not in targets:
            targets.append(target)
        return self

    def add_conditional_edge(
        self, source: str, router: Router, targets: Sequence[str] | Mapping[str, str]
    ) -> Self:
        """After ``source``, go where ``router(state)`` says.

        ``targets`` declares every place the router may send the run: a list of node
        names (the router returns one of them) or a mapping ``outcome -> node`` (the router
        returns an outcome). Diagrams draw exactly these edges; any other answer fails the
        run with :class:`~agentnb.errors.RoutingError`.
        """
        if isinstance(targets, Mapping):
            targets = {outcome: SPELLED.get(node, node) for outcome, node in targets.items()}
        elif isinstance(targets, list | tuple) and any(t in SPELLED for t in targets):
            names: Sequence[str] = targets  # the router says "__end__": END
            targets = {t: SPELLED.get(t, t) for t in names}
        if SPELLED.get(source, source) == START:
            raise DefinitionError(
                "a conditional edge cannot leave START: a run starts at one node",
                culprit=START,
                fix='Route from a first node: add_node("route", lambda state: None), '
                'set_entry_point("route"), then add_conditional_edges("route", ...).',
            )
        if not callable(router):
            raise DefinitionError(
                f"router for {source!r} is not callable",
                culprit=source,
                fix="Pass a function router(state) -> outcome.",
            )
        if isinstance(targets, str) or not isinstance(targets, Sequence | Mapping):
            raise DefinitionError(
                f"targets of the conditional edge from {source!r} must be a list or a mapping",
                culprit=source,
                fix='Declare every destination, e.g. ["approve", "refund"] or {"big": "approve"}.',
            )
        mapping = dict(targets) if isinstance(targets, Mapping) else {t: t for t in targets}
        if not mapping:
            raise DefinitionError(
                f"the conditional edge from {source!r} declares no targets",
                culprit=source,
                fix="List the nodes the router can return.",
            )
        if source in self.branches:
            raise DefinitionError(
                f"node {source!r} already has a conditional edge",
                culprit=source,
                fix="Merge the routers into one that returns every outcome.",
            )
        self.branches[source] = Branch(source, router, mapping)
        return self

    def add_conditional_edges(
        self,
        source: str,
        path: Router,
        path_map: Sequence[str] | Mapping[str, str] | None = None,
    ) -> Self:
        """LangGraph's spelling of :meth:`add_conditional_edge`.

        ``path_map`` is a list of the nodes ``path(state)`` may return, a dict
        ``outcome -> node``, or omitted when ``path``'s return annotation is a
        ``Literal[...]`` of node names. Where the run may go is declared either way.

        Example:
            >>> from typing import Literal
            >>> def size(state) -> Literal["approve", "refund"]:
            ...     return "approve" if state["amount"] > 500 else "refund"
            >>> g = StateGraph("refund")
            >>> for name in ("plan", "approve", "refund"):
            ...     g = g.add_node(name, lambda state: None)
            >>> g.set_entry_point("plan").add_conditional_edges("plan", size)
            StateGraph('refund', nodes=['plan', 'approve', 'refund'])
        """
        from agentnb.graph.routes import declared_targets

        return self.add_conditional_edge(source, path, declared_targets(source, path, path_map))

    def add_interrupt_before(
        self,
        *nodes: str,
        approvers: Collection[str] | PolicyCheck | None = None,
        separate_duties: bool = False,
    ) -> Self:
        """Pause before these nodes until a human approves (or rejects) the run.

        Args:
            nodes: the nodes to pause before.
            approvers: who may decide: a collection of user names and ``"group:NAME"``
                entries, or a function ``policy(identity, run) -> bool``
                (:class:`~agentnb.store.policy.PendingRun` is the ``run``). Anyone when
                omitted. Checked against the identity the deciding process vouches for
                (:class:`~agentnb.Identity`), never the name typed.
            separate_duties: refuse the identity that started the run.

        A collection and ``separate_duties`` are stored with each run, so the CLI and
        other processes are bound by them; a function cannot be stored, so a process
        that has not loaded it refuses to decide (:class:`~agentnb.PolicyUnavailable`).

        Example:
            >>> g = StateGraph("refund").add_node("refund", lambda s: None)
            >>> g = g.set_entry_point("refund")
            >>> g.add_interrupt_before("refund", approvers={"group:finance"}, separate_duties=True)
            StateGraph('refund', nodes=['refund'])
        """
        self._declare("before", nodes, approvers, separate_duties)
        self.interrupts_before.update(nodes)
        return self

    def add_interrupt_after(
        self,
        *nodes: str,
        approvers: Collection[str] | PolicyCheck | None = None,
        separate_duties: bool = False,
    ) -> Self:
        """Pause after these nodes, before whatever follows, until a human decides.

        As in LangGraph, a node the run ends with does not pause (nothing follows), and
        the pause comes before a ``recursion_limit`` the next superstep would pass.
        ``approvers`` and ``separate_duties`` as for :meth:`add_interrupt_before`.
        """
        self._declare("after", nodes, approvers, separate_duties)
        self.interrupts_after.update(nodes)
        return self

    def _named(self, nodes: Sequence[str] | str | None) -> set[str]:
        if nodes == "*":
            return set(self.nodes)
        return {nodes} if isinstance(nodes, str) else set(nodes or ())

    def _declare(
        self, when: str, nodes: Sequence[str], approvers: object, separate_duties: object
    ) -> None:
        """Check every node's policy first: a refusal leaves the graph as it was."""
        declared = {}
        for node in nodes:
            where = f"add_interrupt_{when}({node!r})"
            policy, check = declare(approvers, separate_duties, where)
            if policy is None:
                continue
            key = f"{when}:{node}"
            if key in self.policies:
                raise DefinitionError(
                    f"{where}: the interrupt already has approvers "
                    f"({self.policies[key][0].describe()})",
                    culprit=node,
                    fix="Declare an interrupt's approver policy once.",
                )
            declared[key] = (policy, check)
        self.policies.update(declared)

    def compile(
        self,
        checkpointer: Checkpointer | None = None,
        *,
        max_steps: int | None = None,
        lease_seconds: float = 30.0,
        max_concurrency: int = 16,
        keep_streams: bool = True,
        identity: IdentityProvider | None = None,
        interrupt_before: Sequence[str] | str | None = None,
        interrupt_after: Sequence[str] | str | None = None,
        recursion_limit: int | None = None,
    ) -> Workflow:
        """Validate the graph and return a runnable :class:`~agentnb.Workflow`.

        Args:
            checkpointer: where runs are saved; an in-memory store when omitted.
            max_steps: the most supersteps one run may execute (in a linear workflow, one
                node each); past it the run fails. The
                graph's own ``max_steps`` (25 unless set) when omitted.
            lease_seconds: how long a worker's claim on a run lasts without a write.
            max_concurrency: how many tasks of one superstep run at once (async nodes on
                the event loop, sync nodes in a thread pool of this size).
            keep_streams: save what nodes ``ctx.emit`` (one event per kind and step);
                ``False`` streams it live only.
            identity: who this process is (a ``callable() -> Identity``) for the runs it
                starts and the decisions it makes; the checkpointer's provider (JupyterHub's
                user, else the OS user) when omitted.
            interrupt_before: LangGraph's compile-time form of :meth:`add_interrupt_before`
                (``"*"``: every node), for this workflow only: the graph is not changed.
            interrupt_after: the same for :meth:`add_interrupt_after`.
            recursion_limit: LangGraph's per-invocation budget, counted as LangGraph
                counts it: a run's first invocation (``invoke``, ``run()`` of a new run)
                must end or pause within ``recursion_limit - 1`` supersteps, a resumed
                one within ``recursion_limit + 1`` (LangGraph's input takes two of its
                steps); the superstep past that runs, then the run fails with
                :class:`~agentnb.errors.RecursionLimitReached`. ``None`` (the default):
                only ``max_steps``, the budget of the whole run, applies.
        """
        from agentnb.graph.workflow import Workflow

        steps = self.max_steps if max_steps is None else max_steps
        graph = self
        if interrupt_before or interrupt_after:
            graph = copy.copy(self)
            graph.interrupts_before = self.interrupts_before | self._named(interrupt_before)
            graph.interrupts_after = self.interrupts_after | self._named(interrupt_after)
        return Workflow(
            graph,
            checkpointer,
            max_steps=steps,
            lease_seconds=lease_seconds,
            max_concurrency=max_concurrency,
            keep_streams=keep_streams,
            identity=identity,
            recursion_limit=recursion_limit,
        )
