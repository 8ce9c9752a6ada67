"""``Workflow``: a validated, runnable graph bound to a checkpointer.

Routing lives here and is a pure function of ``(node, state)``. Driving runs lives in
:mod:`agentnb.graph.run`; the methods below are the entry points people call.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentnb._aio import iterate_sync, run_sync
from agentnb._display import Drawable
from agentnb._json import dumps
from agentnb._listeners import Listeners
from agentnb.errors import DefinitionError, RoutingError
from agentnb.graph.builder import END, Branch, NodeSpec, StateGraph
from agentnb.graph.rules import check_graph
from agentnb.graph.state import Reducer
from agentnb.identity import Identity, IdentityProvider, check_provider, vouched
from agentnb.store.base import Checkpointer, check_decision
from agentnb.store.policy import ApproverPolicy, PolicyCheck
from agentnb.store.records import Event, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.graph.run import Run

__all__ = ["Workflow"]


class Workflow(Drawable):
    """A compiled :class:`~agentnb.StateGraph`. Build one with ``graph.compile(...)``."""

    def __init__(
        self,
        graph: StateGraph,
        checkpointer: Checkpointer | None,
        *,
        max_steps: int,
        lease_seconds: float,
        identity: IdentityProvider | None = None,
    ) -> None:
        self._identity = check_provider(identity, "compile()")
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise DefinitionError(
                f"max_steps must be a positive int, not {max_steps!r}",
                culprit="max_steps",
                fix="Pass the most nodes one run may execute, e.g. max_steps=25.",
            )
        if lease_seconds <= 0:
            raise DefinitionError(
                f"lease_seconds must be positive, not {lease_seconds!r}", culprit="lease_seconds"
            )
        self.name = graph.name
        self.nodes: Mapping[str, NodeSpec] = dict(graph.nodes)
        self.edges: Mapping[str, str] = dict(graph.edges)
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
        self.max_steps = max_steps
        self.lease_seconds = float(lease_seconds)
        self.entry = _validate(graph)
        self.shape = _shape_digest(self)
        if checkpointer is None:
            from agentnb.store.memory import MemoryCheckpointer

            checkpointer = MemoryCheckpointer()
        self.checkpointer = checkpointer
        self.listeners: Listeners[[Event]] = Listeners("workflow")

    def identity(self) -> Identity:
        """Who this process is for this workflow's runs and decisions.

        The ``identity=`` provider given to ``compile()``, else the checkpointer's
        (JupyterHub's user inside JupyterHub, otherwise the OS user and its groups).
        """
        return vouched(self._identity or self.checkpointer.identity)

    def subscribe(self, listener: Callable[[Event], object]) -> Callable[[], None]:
        """Call ``listener(event)`` for every event this process saves for this workflow.

        Listeners run after the event is committed, in the worker's thread, outside the
        store's locks; one that raises is reported with a :class:`RuntimeWarning` and does
        not affect the run. Returns an unsubscribe function (calling it twice is harmless).
        Events written by other processes are in the store: read them with
        ``checkpointer.events(run_id)``; in tests, :func:`agentnb.testing.capture_events`.
        """
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
        if branch is not None:
            return list(dict.fromkeys(branch.targets.values()))
        return [self.edges.get(node, END)]

    def route(self, node: str, state: dict[str, Any], *, run_id: str = "?") -> str:
        """The node that follows ``node`` when the state is ``state``.

        Raises:
            RoutingError: the router raised, or returned an outcome it did not declare.
        """
        branch = self.branches.get(node)
        if branch is None:
            return self.edges.get(node, END)
        try:
            outcome = branch.router(state)
        except Exception as exc:
            raise RoutingError(
                run_id, node, f"the router raised {type(exc).__name__}: {exc}"
            ) from exc
        target = branch.targets.get(outcome) if isinstance(outcome, str) else None
        if target is None:
            declared = ", ".join(repr(t) for t in branch.targets)
            raise RoutingError(
                run_id,
                node,
                f"the router returned {outcome!r}, which is not a declared target "
                f"({declared}). Declare it in add_conditional_edge(..., targets) or fix "
                "the router",
            )
        return target

    # -- runs ----------------------------------------------------------------------------

    def start(self, state: Mapping[str, Any] | None = None, *, run_id: str | None = None) -> Run:
        """Create a run at the entry point without executing anything; returns its handle.

        Step it with ``run.step()`` or finish it with ``run.run()``.
        """
        from agentnb.graph.run import Run

        return Run._create(self, dict(state or {}), run_id)

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
        self, state: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> AsyncIterator[Event]:
        """Start a run and yield its events until it pauses for approval or ends."""
        run = self.start(state, run_id=run_id)
        for event in run.events:
            yield event
        async for event in run.astream():
            yield event

    def stream(
        self, state: Mapping[str, Any] | None = None, *, run_id: str | None = None
    ) -> Iterator[Event]:
        """Sync twin of :meth:`astream`."""
        return iterate_sync(self.astream(state, run_id=run_id))

    def aresume(
        self,
        run_id: str,
        decision: str,
        *,
        approver: str,
        comment: str | None = None,
        expected_digest: str | None = None,
    ) -> AsyncIterator[Event]:
        """Decide a pending run, then (if approved) continue it; yields the events.

        The decision is validated at once and recorded when iteration starts (off the
        event loop, see :meth:`Run.adecide`). An approval covers the paused boundary only:
        later interrupts pause again.
        """
        check_decision(decision, approver)

        async def decide_then_follow() -> AsyncIterator[Event]:
            run = self.attach(run_id)
            seen = run.record.seq
            await run.adecide(
                decision, by=approver, comment=comment, expected_digest=expected_digest
            )
            async for event in _follow(run, self.checkpointer.events(run_id, after=seen)):
                yield event

        return decide_then_follow()

    def resume(
        self,
        run_id: str,
        decision: str,
        *,
        approver: str,
        comment: str | None = None,
        expected_digest: str | None = None,
    ) -> Iterator[Event]:
        """Sync twin of :meth:`aresume`; the decision is recorded before this returns."""
        check_decision(decision, approver)
        run = self.attach(run_id)
        seen = run.record.seq
        run.decide(decision, by=approver, comment=comment, expected_digest=expected_digest)
        return iterate_sync(_follow(run, self.checkpointer.events(run_id, after=seen)))

    def invoke(self, state: Mapping[str, Any] | None = None) -> Run:
        """Start a run and drive it until it pauses or ends; returns the run."""
        return run_sync(self.ainvoke(state))

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
    findings = check_graph(
        list(graph.nodes),
        graph.entry,
        [(i, source, target) for i, (source, target) in enumerate(graph.edges.items())],
        [(k, source, b.targets) for k, (source, b) in enumerate(graph.branches.items())],
        list(enumerate(sorted(graph.interrupts_before))),
        list(enumerate(sorted(graph.interrupts_after))),
        form="code",
    )
    if not findings and graph.entry is not None:
        return graph.entry
    first = findings[0]
    raise DefinitionError(first.message, culprit=first.culprit or None, fix=f"{first.fix}.")


def _shape_digest(wf: Workflow) -> str:
    """A fingerprint of what a stored run depends on: nodes, edges, branches, interrupts."""
    shape = {
        "entry": wf.entry,
        "nodes": sorted(wf.nodes),
        "edges": sorted(wf.edges.items()),
        "branches": {s: sorted(b.targets.items()) for s, b in sorted(wf.branches.items())},
        "before": sorted(wf.interrupts_before),
        "after": sorted(wf.interrupts_after),
    }
    return hashlib.sha256(dumps(shape).encode()).hexdigest()[:16]
