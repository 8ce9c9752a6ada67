"""``Workflow``: a validated, runnable graph bound to a checkpointer.

Routing lives here and is a pure function of ``(node, state)``. Driving runs lives in
:mod:`agentnb.graph.run`; the methods below are the entry points people call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from agentnb._aio import alone, iterate_sync, run_sync
from agentnb._display import Drawable
from agentnb._json import dumps
from agentnb._listeners import Listeners
from agentnb.errors import AgentnbError, DefinitionError, RoutingError
from agentnb.graph.builder import END, Branch, Join, NodeSpec, StateGraph
from agentnb.graph.rules import check_graph
from agentnb.graph.state import Reducer, append, apply_delta, json_copy
from agentnb.identity import Identity, IdentityProvider, check_provider, vouched
from agentnb.store.base import Checkpointer
from agentnb.store.decisions import approver_name, check_decision
from agentnb.store.policy import ApproverPolicy, PolicyCheck
from agentnb.store.records import Event, RunRecord, Status

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from agentnb.graph.run import Run
    from agentnb.graph.streams import Emitted

__all__ = ["Workflow"]

_POOLS: dict[int, Executor] = {}


class Workflow(Drawable):
    """A compiled :class:`~agentnb.StateGraph`. Build one with ``graph.compile(...)``.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = StateGraph("greet").add_node("hi", lambda state: {"text": "hi " + state["who"]})
        >>> workflow = graph.set_entry_point("hi").compile()  # in memory; compile(store) keeps runs
        >>> workflow
        <Workflow 'greet': 1 nodes, entry 'hi', max_steps=25>
        >>> workflow.invoke({"who": "ada"}).state
        {'who': 'ada', 'text': 'hi ada'}
    """

    def __init__(
        self,
        graph: StateGraph,
        checkpointer: Checkpointer | None,
        *,
        max_steps: int,
        lease_seconds: float,
        max_concurrency: int = 16,
        keep_streams: bool = True,
        identity: IdentityProvider | None = None,
        recursion_limit: int | None = None,
    ) -> None:
        self._identity = check_provider(identity, "compile()")
        if recursion_limit is not None and (
            not isinstance(recursion_limit, int)
            or isinstance(recursion_limit, bool)
            or recursion_limit < 1
        ):
            raise DefinitionError(
                f"recursion_limit must be a positive int or None, not {recursion_limit!r}",
                culprit="recursion_limit",
                fix="Pass LangGraph's recursion_limit, e.g. recursion_limit=25, or leave it "
                "out to bound runs by max_steps only.",
            )
        self.recursion_limit = recursion_limit
        """LangGraph's per-invocation superstep budget (see ``StateGraph.compile``)."""
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise DefinitionError(
                f"max_steps must be a positive int, not {max_steps!r}",
                culprit="max_steps",
                fix="Pass the most nodes one run may execute, e.g. max_steps=25.",
            )
        if (
            not isinstance(max_concurrency, int)
            or isinstance(max_concurrency, bool)
            or max_concurrency < 1
        ):
            raise DefinitionError(
                f"max_concurrency must be a positive int, not {max_concurrency!r}",
                culprit="max_concurrency",
                fix="Pass how many tasks of one superstep may run at once, e.g. 8.",
            )
        if lease_seconds <= 0:
            raise DefinitionError(
                f"lease_seconds must be positive, not {lease_seconds!r}", culprit="lease_seconds"
            )
        self.name = graph.name
        self.graph = graph
        self.nodes: Mapping[str, NodeSpec] = dict(graph.nodes)
        self.edges: Mapping[str, tuple[str, ...]] = {s: tuple(t) for s, t in graph.edges.items()}
        self.joins: tuple[Join, ...] = tuple(graph.joins)
        self.branches: Mapping[str, Branch] = dict(graph.branches)
        self.interrupts_before = frozenset(graph.interrupts_before)
        self.interrupts_after = frozenset(graph.interrupts_after)
        self.policies: Mapping[str, ApproverPolicy] = {
            key: policy for key, (policy, _) in graph.policies.items()
        }
        """Each interrupt's approver policy as stored with a run (``"before:NODE"`` keys)."""
        self.policy_checks: Mapping[str, PolicyCheck] = {
            key: check for key, (_, check) in graph.policies.items() if check is not None
        }
        self.reducers: Mapping[str, Reducer] = dict(graph.reducers)
        self.defaults: Mapping[str, Any] = dict(getattr(graph, "defaults", {}))
        """Each schema reducer key's value before it is written: a run's first state."""
        self.max_steps = max_steps
        self.max_concurrency = max_concurrency
        self.keep_streams = bool(keep_streams)
        self.lease_seconds = float(lease_seconds)
        self.entry = _validate(graph)
        self.order = {name: i for i, name in enumerate(self.nodes)}
        """Each node's declaration index: the merge order of a superstep."""
        from agentnb.graph.superstep import Task

        # The driver's plan of this graph, built once (private: a Workflow's public
        # attributes are the user's).
        self._plain_tasks: Mapping[str, tuple[Task]] = {
            name: (Task(name, name),) for name in self.nodes
        }
        """Each node's superstep when it runs alone (a linear run's)."""
        self._appends = frozenset(k for k, r in self.reducers.items() if r is append)
        """The keys the ``append`` reducer merges."""
        self.nested = frozenset(n for n, spec in self.nodes.items() if spec.subgraph is not None)
        self._direct = frozenset(
            n for n, spec in self.nodes.items() if not spec.guarded and spec.subgraph is None
        )
        """Nodes the driver calls straight away: no timeout, retry, breaker or subgraph."""
        in_joins = {source for join in self.joins for source in join.sources}
        self.joined = frozenset(in_joins)
        self._simple_next: Mapping[str, str] = {
            name: (self.edges.get(name) or (END,))[0]
            for name in self.nodes
            if name not in self.branches
            and name not in in_joins
            and len(self.edges.get(name, ())) <= 1
        }
        """The one node that follows each node whose way on needs no routing: no branch,
        no join, at most one plain edge (a linear step skips the router)."""
        if checkpointer is None:
            from agentnb.store.memory import MemoryCheckpointer

            checkpointer = MemoryCheckpointer()
        self.checkpointer = checkpointer
        self._children: dict[str, Workflow] = {}
        self.shape = _shape_digest(self)
        self.listeners: Listeners[[Event]] = Listeners("workflow")
        self.emitted: Listeners[[Emitted]] = Listeners("workflow stream")

    def _child(self, node: str) -> Workflow:
        """The workflow of subgraph node ``node``, bound to this workflow's store."""
        child = self._children.get(node)
        if child is None:
            graph = self.nodes[node].subgraph
            assert graph is not None
            child = Workflow(
                graph,
                self.checkpointer,
                max_steps=graph.max_steps,
                lease_seconds=self.lease_seconds,
                max_concurrency=self.max_concurrency,
            )
            self._children[node] = child
        return child

    def bound_to(self, checkpointer: Checkpointer) -> Workflow:
        """This workflow, its settings kept, on ``checkpointer`` (itself if it is its own)."""
        if checkpointer is self.checkpointer:
            return self
        return Workflow(
            self.graph,
            checkpointer,
            max_steps=self.max_steps,
            lease_seconds=self.lease_seconds,
            max_concurrency=self.max_concurrency,
            keep_streams=self.keep_streams,
            identity=self._identity,
            recursion_limit=self.recursion_limit,
        )

    def _threads(self) -> Executor:
        """The pool sync nodes of a superstep run in (``max_concurrency`` threads).

        One pool per size for the whole process: workflows are cheap to compile, and
        threads are not.
        """
        pool = _POOLS.get(self.max_concurrency)
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="agentnb-task")
            pool = _POOLS.setdefault(self.max_concurrency, pool)
        return pool

    def identity(self) -> Identity:
        """Who this process is for this workflow's runs and decisions.

        The ``identity=`` provider given to ``compile()``, else the checkpointer's
        (JupyterHub's user inside JupyterHub, otherwise the OS user and its groups).
        """
        return vouched(self._identity or self.checkpointer.identity)

    @overload
    def subscribe(
        self, listener: Callable[[Event], object], *, mode: Literal["events"] = "events"
    ) -> Callable[[], None]: ...
    @overload
    def subscribe(
        self, listener: Callable[[Emitted], object], *, mode: Literal["custom"]
    ) -> Callable[[], None]: ...
    def subscribe(
        self, listener: Callable[[Any], object], *, mode: str = "events"
    ) -> Callable[[], None]:
        """Call ``listener(event)`` for every event this process saves for this workflow.

        With ``mode="custom"`` (the name ``astream`` uses), ``listener`` is told instead of
        every item a node of this workflow emits (``ctx.emit``) in this process, as an
        :class:`~agentnb.graph.streams.Emitted`, the moment it is emitted (in the node's
        thread) — whoever drives the run.

        Listeners run after the event is committed, in the worker's thread, outside the
        store's locks; one that raises is reported with a :class:`RuntimeWarning` and does
        not affect the run. Returns an unsubscribe function (calling it twice is harmless).
        Events written by other processes are in the store: read them with
        ``checkpointer.events(run_id)``; in tests, :func:`agentnb.testing.capture_events`.
        """
        if mode == "custom":
            return self.emitted.add(listener)
        if mode != "events":
            raise AgentnbError(f"subscribe(mode={mode!r}): use mode='events' or mode='custom'")
        return self.listeners.add(listener)

    def _notify(self, events: Sequence[Event]) -> None:
        for event in events:
            self.listeners.notify(event)

    def __repr__(self) -> str:
        return (
            f"<Workflow {self.name!r}: {len(self.nodes)} nodes, entry {self.entry!r}, "
            f"max_steps={self.max_steps}>"
        )

    # -- routing (pure) ------------------------------------------------------------------

    def successors(self, node: str) -> list[str]:
        """Every node (or ``END``) that can follow ``node``, in declaration order."""
        branch = self.branches.get(node)
        found: list[str] = []
        if branch is not None:
            found += branch.targets.values()
        found += self.edges.get(node, ())
        found += [j.target for j in self.joins if node in j.sources]
        if not found:
            found.append(END)
        return list(dict.fromkeys(found))

    def route(self, node: str, state: dict[str, Any], *, run_id: str = "?") -> str:
        """The node that follows ``node`` when the state is ``state`` (one branch only).

        For fan-out, joins and :class:`~agentnb.Send`, see
        ``agentnb.graph.superstep.follow``, which the runtime uses.

        Raises:
            RoutingError: the router raised, returned an outcome it did not declare, or
                more than one way on.
        """
        from agentnb.graph.superstep import follow

        triggers, sends = follow(self, node, state, run_id=run_id)
        if len(triggers) + len(sends) != 1 or sends:
            raise RoutingError(
                run_id, node, f"it leads to {len(triggers) + len(sends)} places, not one"
            )
        return triggers[0]

    # -- runs ----------------------------------------------------------------------------

    def start(
        self,
        state: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        replace: bool = False,
    ) -> Run:
        """Create a run at the entry point without executing anything; returns its handle.

        Step it with ``run.step()`` or finish it with ``run.run()``.

        Args:
            state: the input, merged into the schema's defaults by the reducers.
            run_id: the run's id (default: a new random one). An id names one run: starting
                it again raises :class:`~agentnb.errors.StoreError`, unless ``replace``.
            replace: if a run ``run_id`` exists, delete it first — its checkpoints, events,
                effect ledger, subgraph runs **and its decision audit**, so nothing of it can
                be read as the new run's — then start afresh under the same id: a notebook
                cell that starts a fixed id can be run again. A run held by a live lease (a
                worker driving it) is refused with :class:`~agentnb.errors.RunActive` and
                nothing is deleted; a pending or approved run is replaced. The new run's
                ``ctx.idempotency_key`` values are the old run's (``run_id:step:task``): a
                service that de-duplicates by them answers a repeated effect with its
                first receipt. Keep ``replace`` for runs whose audit nobody needs: give a
                run that must stay on record an id of its own.

        Example:
            >>> from agentnb import StateGraph
            >>> wf = StateGraph("hi").add_node("greet", lambda s: {"n": s["n"] + 1})
            >>> wf = wf.set_entry_point("greet").compile()
            >>> wf.start({"n": 1}, run_id="hello").run().state["n"]
            2
            >>> wf.start({"n": 10}, run_id="hello", replace=True).run().state["n"]
            11
        """
        from agentnb.graph.run import Run

        return Run._create(self, self.first_state(state), run_id, replace=replace)

    def first_state(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """A run's first state, as LangGraph makes it: each schema reducer key at its
        default (``[]``, ``0``), then ``given`` merged in through the reducers (a custom
        reducer sees ``default, given``); a key with no default takes its given value as
        it is (a LangGraph channel's first value).

        Raises:
            InvalidState: ``given`` is not JSON (named by its key path).
        """
        from agentnb._json import check

        given = dict(given or {})
        check(given, root="state")
        if not self.defaults:
            return given
        start = {key: json_copy(value) for key, value in self.defaults.items()}
        reduced = {k: v for k, v in given.items() if k in start}
        return {**given, **apply_delta(start, reduced, self.reducers)}

    def submit(
        self,
        state: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        replace: bool = False,
    ) -> Run:
        """Queue a run for a :class:`~agentnb.Worker`; nothing executes in the caller.
        ``run_id`` and ``replace`` are :meth:`start`'s.

        The run is saved ``queued`` (durably, with its first checkpoint) and returned as a
        handle: any worker with this workflow (``agentnb worker --db ... --workflow ...``,
        or ``Worker(workflow).run()``) claims it, on this machine or another.

        Example:
            >>> from agentnb import StateGraph, Worker
            >>> g = StateGraph("hello").add_node("greet", lambda s: {"said": "hi"})
            >>> wf = g.set_entry_point("greet").compile()
            >>> run = wf.submit({"name": "Ada"})
            >>> str(run.status)
            'queued'
            >>> Worker(wf).run(until_idle=True).completed
            1
            >>> run.state["said"]
            'hi'
        """
        from agentnb.graph.run import Run

        return Run._create(
            self, self.first_state(state), run_id, status=Status.QUEUED, replace=replace
        )

    def attach(self, run_id: str) -> Run:
        """Re-attach to an existing run (after a restart, or from another kernel).

        Raises:
            RunNotFound: no such run in this workflow's checkpointer.
            IncompatibleWorkflow: the run was made by a workflow of another shape.
        """
        from agentnb.graph.run import Run

        return Run._attach(self, run_id)

    def runs(self, status: Status | str | None = None) -> list[RunRecord]:
        """This workflow's runs in its checkpointer, newest first."""
        return [r for r in self.checkpointer.list_runs(status) if r.graph == self.name]

    async def astream(
        self,
        state: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        mode: str = "events",
    ) -> AsyncIterator[Any]:
        """Start a run and yield its events until it pauses for approval or ends.

        ``mode="custom"`` yields what the nodes emit (``ctx.emit``) as they run instead.
        """
        run = self.start(state, run_id=run_id)
        stream = run.astream(mode=mode)
        if mode == "events":
            for event in run.events:
                yield event
        async for item in stream:
            yield item

    def stream(
        self,
        state: Mapping[str, Any] | None = None,
        *,
        run_id: str | None = None,
        mode: str = "events",
    ) -> Iterator[Any]:
        """Sync twin of :meth:`astream`."""
        return iterate_sync(self.astream(state, run_id=run_id, mode=mode))

    def aresume(
        self,
        run_id: str,
        decision: str,
        *,
        by: str | None = None,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        update: dict[str, Any] | None = None,
        approver: str | None = None,
    ) -> AsyncIterator[Event]:
        """Async twin of :meth:`resume`: the decision is validated at once and recorded
        when iteration starts (off the event loop, see :meth:`~agentnb.Run.adecide`)."""
        name = approver_name(by, approver, "aresume")
        check_decision(decision, name)

        async def decide_then_follow() -> AsyncIterator[Event]:
            run = self.attach(run_id)
            seen = run.record.seq
            await run.adecide(
                decision,
                by=name,
                comment=comment,
                expected_digest=expected_digest,
                task=task,
                update=update,
            )
            async for event in _follow(run, self.checkpointer.events(run_id, after=seen)):
                yield event

        return decide_then_follow()

    def resume(
        self,
        run_id: str,
        decision: str,
        *,
        by: str | None = None,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        update: dict[str, Any] | None = None,
        approver: str | None = None,
    ) -> Iterator[Event]:
        """Decide a pending run, then (if approved) continue it; yields the events.

        The seed's spelling of ``run = workflow.attach(run_id)``,
        ``run.decide(decision, by=...)`` (see :meth:`~agentnb.Run.approve`), then
        ``run.stream()``: the decision is recorded before this returns, and its events
        come first. An approval covers the paused boundary only: later interrupts pause
        again. ``approver=`` is the deprecated spelling of ``by=`` (it warns).
        """
        name = approver_name(by, approver, "resume")
        check_decision(decision, name)
        run = self.attach(run_id)
        seen = run.record.seq
        run.decide(
            decision,
            by=name,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            update=update,
        )
        return iterate_sync(_follow(run, self.checkpointer.events(run_id, after=seen)))

    def invoke(self, state: Mapping[str, Any] | None = None) -> Run:
        """Start a run and drive it until it pauses or ends; returns the run."""
        return run_sync(alone(self.ainvoke(state)))

    async def ainvoke(self, state: Mapping[str, Any] | None = None) -> Run:
        """Async twin of :meth:`invoke`."""
        run = self.start(state)
        await run.arun()
        return run


async def _follow(run: Run, decided: list[Event]) -> AsyncIterator[Event]:
    """The decision's events, then — if it approved — the run continued to its next pause."""
    for event in decided:
        yield event
    if run.record.status == Status.APPROVED:
        async for event in run.astream():
            yield event


def _validate(graph: StateGraph) -> str:
    """Check the graph's structure (:mod:`agentnb.graph.rules`); return the entry node."""
    edges = [(s, t) for s, targets in graph.edges.items() for t in targets]
    findings = check_graph(
        list(graph.nodes),
        graph.entry,
        [(i, source, target) for i, (source, target) in enumerate(edges)],
        [(k, source, b.targets) for k, (source, b) in enumerate(graph.branches.items())],
        list(enumerate(sorted(graph.interrupts_before))),
        list(enumerate(sorted(graph.interrupts_after))),
        form="code",
        joins=[(len(edges) + i, j.sources, j.target) for i, j in enumerate(graph.joins)],
    )
    if not findings and graph.entry is not None:
        return graph.entry
    first = findings[0]
    raise DefinitionError(first.message, culprit=first.culprit or None, fix=f"{first.fix}.")


def _shape_digest(wf: Workflow) -> str:
    """A fingerprint of what a stored run depends on: nodes, edges, branches, interrupts."""
    import hashlib  # (OpenSSL's: a few ms to load) when a graph is compiled

    edges = sorted((s, t) for s, targets in wf.edges.items() for t in targets)
    shape: dict[str, Any] = {
        "entry": wf.entry,
        "nodes": sorted(wf.nodes),
        "edges": edges,
        "branches": {s: sorted(b.targets.items()) for s, b in sorted(wf.branches.items())},
        "before": sorted(wf.interrupts_before),
        "after": sorted(wf.interrupts_after),
    }
    if wf.joins:  # only when present: linear graphs keep the fingerprint of older runs
        shape["joins"] = [[list(j.sources), j.target] for j in wf.joins]
    nested = {n: s.subgraph for n, s in sorted(wf.nodes.items()) if s.subgraph is not None}
    if nested:
        shape["subgraphs"] = {n: wf._child(n).shape for n in nested}
    return hashlib.sha256(dumps(shape).encode()).hexdigest()[:16]
