"""``StateGraph``: declare nodes, edges, branches and interrupts, then ``compile()``.

Mistakes are reported as :class:`~agentnb.errors.DefinitionError` naming the culprit and the
fix — obvious ones (a duplicate name) as soon as they are made, structural ones (an edge to a
node that does not exist, a node nothing reaches) when compiling.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from agentnb._display import Drawable
from agentnb.errors import DefinitionError
from agentnb.graph.state import DEFAULT_REDUCERS, Reducer
from agentnb.resilience import CircuitBreaker, Retry
from agentnb.store.policy import ApproverPolicy, PolicyCheck, declare

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow
    from agentnb.identity import IdentityProvider
    from agentnb.store.base import Checkpointer

__all__ = ["END", "START", "Branch", "NodeSpec", "StateGraph"]

START = "START"
"""Pseudo-node before the entry point: ``add_edge(START, "plan")`` sets the entry point."""
END = "END"
"""Pseudo-node after the last node: ``add_edge("refund", END)``. A node with no edge ends too."""

RESERVED = frozenset({START, END, "__start__", "__end__"})

NodeFn = Callable[..., Any]
Router = Callable[[dict[str, Any]], str]


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: its function, and how to call it."""

    name: str
    fn: NodeFn
    takes_ctx: bool
    is_async: bool
    description: str | None = None
    timeout: float | None = None
    retry: Retry | None = None
    breaker: CircuitBreaker | None = None

    @property
    def guarded(self) -> bool:
        """True when a timeout, retry policy or breaker wraps the call."""
        return self.timeout is not None or self.retry is not None or self.breaker is not None


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: ``router(state)`` returns an outcome; ``targets`` maps it to a node."""

    source: str
    router: Router
    targets: Mapping[str, str]

    @property
    def labelled(self) -> bool:
        """True when outcomes differ from node names (the edge is labelled in diagrams)."""
        return any(outcome != node for outcome, node in self.targets.items())


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


def _arity(fn: NodeFn, name: str) -> bool:
    """Whether ``fn`` takes ``(state, ctx)`` rather than ``(state)``."""
    import inspect

    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: assume fn(state)
        return False
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    if len(required) > 2 or (not positional and not varargs):
        raise DefinitionError(
            f"node {name!r}: {getattr(fn, '__name__', fn)!r} takes {len(required)} required "
            "arguments",
            culprit=name,
            fix="A node is fn(state) or fn(state, ctx) and returns a dict of changes or None.",
        )
    # A second parameter with a default (``lambda state, i=i: ...``) is the caller's own;
    # it receives ctx only when it is required or named for it.
    named_ctx = len(positional) >= 2 and positional[1].name in ("ctx", "context")
    return len(required) >= 2 or named_ctx or varargs


def _is_async(fn: NodeFn) -> bool:
    import inspect

    call = getattr(fn, "__call__", None)  # noqa: B004 - instances with an async __call__
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


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
        >>> [e.type for e in wf.stream({"name": "Ada"})]
        ['run_started', 'node_start', 'state_update', 'completed']
    """

    def __init__(
        self,
        name: str = "workflow",
        *,
        reducers: Mapping[str, Reducer] | None = None,
        max_steps: int = 25,
    ) -> None:
        self.name = _check_name(name, "graph")
        self.max_steps = max_steps
        self.reducers: dict[str, Reducer] = {**DEFAULT_REDUCERS, **(reducers or {})}
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: dict[str, str] = {}
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
        name: str,
        fn: NodeFn,
        *,
        description: str | None = None,
        timeout: float | None = None,
        retry: Retry | int | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> Self:
        """Add a node: ``fn(state)`` or ``fn(state, ctx)``, sync or async, returning a delta.

        Args:
            name: unique within the graph.
            fn: the node's function.
            description: shown in diagrams.
            timeout: seconds an attempt may take before it is cancelled.
            retry: a :class:`~agentnb.resilience.Retry` policy, or a number of attempts.
            breaker: a :class:`~agentnb.resilience.CircuitBreaker` shared by the nodes that
                call the same dependency.
        """
        _check_name(name, "node")
        if name in self.nodes:
            raise DefinitionError(
                f"node {name!r} is already defined",
                culprit=name,
                fix="Give each node a unique name.",
            )
        if not callable(fn):
            raise DefinitionError(
                f"node {name!r}: {fn!r} is not callable",
                culprit=name,
                fix="Pass a function fn(state) or fn(state, ctx).",
            )
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise DefinitionError(
                f"node {name!r}: timeout={timeout!r} must be a positive number of seconds",
                culprit=name,
            )
        if breaker is not None and not isinstance(breaker, CircuitBreaker):
            raise DefinitionError(
                f"node {name!r}: breaker={breaker!r} is not a CircuitBreaker", culprit=name
            )
        self.nodes[name] = NodeSpec(
            name,
            fn,
            _arity(fn, name),
            _is_async(fn),
            description,
            None if timeout is None else float(timeout),
            Retry.coerce(retry),
            breaker,
        )
        return self

    def set_entry_point(self, name: str) -> Self:
        """The node a run starts at."""
        self.entry = name
        return self

    def add_edge(self, source: str, target: str) -> Self:
        """After ``source`` runs, go to ``target`` (a node or ``END``)."""
        if source == START:
            return self.set_entry_point(target)
        if source in self.edges and self.edges[source] != target:
            raise DefinitionError(
                f"node {source!r} already has an edge to {self.edges[source]!r}",
                culprit=source,
                fix="A node has one plain edge; use add_conditional_edge() to branch.",
            )
        self.edges[source] = target
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

        ``approvers`` and ``separate_duties`` as for :meth:`add_interrupt_before`.
        """
        self._declare("after", nodes, approvers, separate_duties)
        self.interrupts_after.update(nodes)
        return self

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
        identity: IdentityProvider | None = None,
    ) -> Workflow:
        """Validate the graph and return a runnable :class:`~agentnb.Workflow`.

        Args:
            checkpointer: where runs are saved; an in-memory store when omitted.
            max_steps: the most nodes one run may execute; past it the run fails. The
                graph's own ``max_steps`` (25 unless set) when omitted.
            lease_seconds: how long a worker's claim on a run lasts without a write.
            identity: who this process is (a ``callable() -> Identity``) for the runs it
                starts and the decisions it makes; the checkpointer's provider (JupyterHub's
                user, else the OS user) when omitted.
        """
        from agentnb.graph.workflow import Workflow

        steps = self.max_steps if max_steps is None else max_steps
        return Workflow(
            self, checkpointer, max_steps=steps, lease_seconds=lease_seconds, identity=identity
        )
