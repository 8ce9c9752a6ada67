"""``Run``: one execution of a workflow, driven step by step or to the next pause.

A ``Run`` is a handle on a row in the checkpointer, not the owner of the truth: every call
that drives it first takes the run's lease in the database (so two kernels never drive one
run at once), re-reads where the run stands, executes, and writes each step atomically.
That is what lets a run be paused in one process, decided from the CLI, and continued in
another after a restart.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentnb._aio import iterate_sync, run_sync
from agentnb._display import Drawable, HasTimeline, Viewable
from agentnb._json import check, dumps, loads
from agentnb.errors import (
    AgentnbError,
    IncompatibleWorkflow,
)
from agentnb.graph.builder import END
from agentnb.graph.state import apply_delta
from agentnb.store.base import CheckpointWrite, new_owner
from agentnb.store.policy import RunPolicy
from agentnb.store.records import (
    Checkpoint,
    Decision,
    Effect,
    Event,
    EventType,
    RunRecord,
    Status,
)

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow

__all__ = ["NodeContext", "Run", "StepResult"]

_BUILTIN_TYPES = frozenset(t.value for t in EventType)


class NodeContext:
    """What a node ``fn(state, ctx)`` knows about where it runs.

    Attributes:
        run_id: the run's id.
        step: how many nodes ran before this one (0 for the first).
        node: this node's name.
        idempotency_key: stable for this run, step and node — the same when the step is
            re-executed after a crash — so a payment API can de-duplicate the call.
    """

    __slots__ = ("_run", "_sink", "idempotency_key", "node", "run_id", "step")

    def __init__(
        self, run: Run, node: str, step: int, sink: Callable[[str, dict[str, Any]], None]
    ) -> None:
        self._run = run
        self._sink = sink  # records an event with the step in flight
        self.run_id = run.run_id
        self.node = node
        self.step = step
        self.idempotency_key = f"{run.run_id}:{step}:{node}"

    def once(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run the side effect ``fn()`` at most once for this step; return its result.

        The result (JSON) is recorded in the checkpointer's ledger under
        ``idempotency_key`` + ``name``. If the step runs again — a retry, or a worker
        restarted after a crash — the recorded result is returned and ``fn`` is not
        called. A crash between ``fn`` returning and the record being written can still
        repeat it: pass ``ctx.idempotency_key`` to the service too, so it de-duplicates.
        """
        key, found = self._recorded(name)
        if found is not None:
            return found
        result = fn()
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            raise TypeError(f"ctx.once({name!r}, fn): fn is async; use await ctx.aonce(...)")
        return self._record(key, name, result)

    async def aonce(self, name: str, fn: Callable[[], Any]) -> Any:
        """Async twin of :meth:`once`: ``fn()`` may return an awaitable."""
        key, found = self._recorded(name)
        if found is not None:
            return found
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        return self._record(key, name, result)

    def _recorded(self, name: str) -> tuple[str, Any]:
        if not isinstance(name, str) or not name:
            raise AgentnbError(f"ctx.once({name!r}, ...): name the side effect with a string")
        key = f"{self.idempotency_key}:{name}"
        stored = self._run.workflow.checkpointer.recorded_effect(key)
        if stored is None:
            return key, None
        self._sink(EventType.EFFECT_REPLAYED, {"name": name, "key": key})
        return key, loads(stored)

    def _record(self, key: str, name: str, result: Any) -> Any:
        text = dumps(result, root=f"ctx.once({name!r}) result")
        stored = self._run.workflow.checkpointer.record_effect(
            key, run_id=self.run_id, step=self.step, node=self.node, name=name, result_json=text
        )
        self._sink(EventType.EFFECT, {"name": name, "key": key})
        return loads(stored)

    def emit(self, type: str, payload: dict[str, Any] | None = None) -> None:
        """Record a custom event; it is saved with this step and streamed after it."""
        if type in _BUILTIN_TYPES or not isinstance(type, str) or not type:
            raise AgentnbError(
                f"ctx.emit({type!r}): custom event types must be non-empty strings other "
                f"than the built-in ones ({', '.join(sorted(_BUILTIN_TYPES))})"
            )
        payload = dict(payload or {})
        check(payload, root=f"ctx.emit({type!r}) payload")
        self._sink(type, payload)


@dataclass(frozen=True)
class StepResult:
    """What one :meth:`Run.step` did."""

    run_id: str
    node: str | None
    """The node that executed, or ``None`` when nothing could (pending, finished, ...)."""
    delta: dict[str, Any] | None
    status: Status
    next: str
    """The node that runs next (``END`` when finished)."""
    events: list[Event] = field(repr=False)

    def __str__(self) -> str:
        if self.node is None:
            what = f"nothing ran: the run is {self.status}"
            if self.status == Status.PENDING:
                what += f", waiting for approval before {self.next!r}"
            return what
        return f"ran {self.node!r} → {self.next!r}  delta={self.delta}  [{self.status}]"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


class Run(Drawable, HasTimeline, Viewable):
    """A run of a workflow. Create with ``workflow.start()``, re-attach with ``attach()``."""

    def __init__(self, workflow: Workflow, record: RunRecord) -> None:
        self.workflow = workflow
        self.run_id = record.run_id
        self.owner = new_owner()
        self._store = workflow.checkpointer
        self._record = record
        self._state_json = ""
        self._state: dict[str, Any] = {}
        self._load_state(record)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def _create(
        cls,
        workflow: Workflow,
        state: dict[str, Any],
        run_id: str | None,
        *,
        node: str | None = None,
        step: int = 0,
        origin: dict[str, Any] | None = None,
    ) -> Run:
        check(state, root="state")
        state_json = dumps(state)
        run_id = run_id or os.urandom(16).hex()
        node = node or workflow.entry
        now = time.time()
        record = RunRecord(
            run_id=run_id,
            graph=workflow.name,
            shape=workflow.shape,
            status=Status.RUNNING,
            node=node,
            step=step,
            seq=1,
            max_steps=workflow.max_steps,
            created_at=now,
            updated_at=now,
        )
        payload = {
            "graph": workflow.name,
            "state": loads(state_json),
            "max_steps": record.max_steps,
        }
        if origin:
            payload["forked_from"] = origin
        started_by = workflow.identity()
        payload["started_by"] = started_by.name
        started = Event(run_id, 1, step, EventType.RUN_STARTED, node, payload, now)
        workflow.checkpointer.create_run(
            record,
            CheckpointWrite(step, node, state_json),
            [started],
            started_by=started_by,
            policies=workflow.policies,
        )
        if workflow.listeners:
            workflow._notify([started])
        return cls(workflow, record)

    def fork(
        self,
        step: int | None = None,
        *,
        update: dict[str, Any] | None = None,
        run_id: str | None = None,
    ) -> Run:
        """A new run that starts from this run's checkpoint after ``step`` nodes.

        Time travel without rewriting history: this run is untouched; the fork continues
        from the same node with the same state (plus ``update``, merged by the graph's
        reducers), and its ``run_started`` event says where it came from. Nothing executes
        until you step or run it.

        Args:
            step: which checkpoint (default: the latest).
            update: keys to change in the forked state, e.g. to try another amount.
            run_id: the fork's id (default: a new random one).
        """
        checkpoint = self._store.checkpoint(self.run_id, step)
        state = checkpoint.state
        if update:
            check(update, root="update")
            state = apply_delta(state, update, self.workflow.reducers)
        origin = {"run_id": self.run_id, "step": checkpoint.step}
        return Run._create(
            self.workflow,
            state,
            run_id,
            node=checkpoint.node,
            step=checkpoint.step,
            origin=origin,
        )

    @classmethod
    def _attach(cls, workflow: Workflow, run_id: str) -> Run:
        record = workflow.checkpointer.get_run(run_id)
        _check_compatible(workflow, record)
        return cls(workflow, record)

    def _load_state(self, record: RunRecord) -> None:
        cp = self._store.checkpoint(record.run_id)
        self._state = cp.state
        self._state_json = dumps(cp.state)
        self._record = record

    def _sync(self, record: RunRecord) -> None:
        """Adopt ``record``; reload the state only if another worker moved the run."""
        if record.step != self._record.step or not self._state_json:
            self._load_state(record)
        else:
            self._record = record

    # -- what a person looks at ----------------------------------------------------------

    @property
    def record(self) -> RunRecord:
        """The run's row as stored now."""
        self._sync(self._store.get_run(self.run_id))
        return self._record

    @property
    def status(self) -> Status:
        return self.record.status

    @property
    def node(self) -> str:
        """The node that runs next (or is awaiting approval); ``END`` once finished."""
        return self.record.node

    @property
    def steps(self) -> int:
        """How many nodes have executed (of ``record.max_steps``)."""
        return self.record.step

    @property
    def state(self) -> dict[str, Any]:
        """A copy of the current state."""
        self._sync(self._store.get_run(self.run_id))
        return loads(self._state_json)  # type: ignore[no-any-return]

    @property
    def events(self) -> list[Event]:
        """Every event of the run so far, from the store."""
        return self._store.events(self.run_id)

    @property
    def pending_digest(self) -> str | None:
        """Digest of the state awaiting approval; pass it to ``approve`` to bind the decision."""
        return self.record.pending_digest

    @property
    def policy(self) -> RunPolicy:
        """Who started the run, and who may decide its interrupts (stored at its start)."""
        return self._store.run_policy(self.run_id)

    def history(self) -> list[Checkpoint]:
        """Every checkpoint, oldest first: the state after 0, 1, 2, ... nodes."""
        return self._store.checkpoints(self.run_id)

    def decisions(self) -> list[Decision]:
        """The audit of decisions on this run, refused attempts included."""
        return self._store.decisions(self.run_id)

    def effects(self) -> list[Effect]:
        """The side effects recorded through ``ctx.once``, oldest first."""
        return self._store.effects(self.run_id)

    def __repr__(self) -> str:
        r = self.record
        worker = f", worker {r.lease_owner}" if r.lease_owner else ""
        return (
            f"<Run {self.run_id[:12]} of {r.graph!r}: {r.status} at {r.node!r}, "
            f"step {r.step}/{r.max_steps}{worker}>"
        )

    # -- decisions -----------------------------------------------------------------------

    def decide(
        self,
        decision: str,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
    ) -> Decision:
        """Record ``approved`` or ``rejected`` for the paused boundary (exactly once).

        ``by`` is the name kept in the audit; the interrupt's approver policy is checked
        against ``workflow.identity()`` — who this process vouches for — and a refusal
        raises :class:`~agentnb.NotAuthorized` (audited, nothing changed).
        """
        seen = self._record.seq
        decision_record = self._store.decide(
            self.run_id,
            decision,
            by,
            comment=comment,
            expected_digest=expected_digest,
            identity=self.workflow.identity(),
            checks=self.workflow.policy_checks,
        )
        self._sync(self._store.get_run(self.run_id))
        if self.workflow.listeners:
            self.workflow._notify(self._store.events(self.run_id, after=seen))
        return decision_record

    def approve(
        self, *, by: str, comment: str | None = None, expected_digest: str | None = None
    ) -> Decision:
        """Approve the pending node; ``step()``/``run()`` then executes it."""
        return self.decide("approved", by=by, comment=comment, expected_digest=expected_digest)

    def reject(
        self, *, by: str, comment: str | None = None, expected_digest: str | None = None
    ) -> Decision:
        """Reject the pending node: the run ends ``rejected`` and the node never runs."""
        return self.decide("rejected", by=by, comment=comment, expected_digest=expected_digest)

    async def adecide(
        self,
        decision: str,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
    ) -> Decision:
        """Async twin of :meth:`decide`.

        The database call runs in a worker thread: a decision may wait for another
        process's write (up to the store's busy timeout), and the event loop must not.
        """
        import asyncio

        return await asyncio.to_thread(
            self.decide, decision, by=by, comment=comment, expected_digest=expected_digest
        )

    async def aapprove(
        self, *, by: str, comment: str | None = None, expected_digest: str | None = None
    ) -> Decision:
        """Async twin of :meth:`approve`."""
        return await self.adecide(
            "approved", by=by, comment=comment, expected_digest=expected_digest
        )

    async def areject(
        self, *, by: str, comment: str | None = None, expected_digest: str | None = None
    ) -> Decision:
        """Async twin of :meth:`reject`."""
        return await self.adecide(
            "rejected", by=by, comment=comment, expected_digest=expected_digest
        )

    # -- driving -------------------------------------------------------------------------

    async def astep(self) -> StepResult:
        """Execute exactly one node, or stop at an interrupt; return what happened."""
        events = [e async for e in self._drive(max_nodes=1)]
        started = [e for e in events if e.type == EventType.NODE_START]
        updates = [e for e in events if e.type == EventType.STATE_UPDATE]
        record = self._record
        return StepResult(
            run_id=self.run_id,
            node=started[0].node if started else None,
            delta=updates[0].payload["delta"] if updates else None,
            status=record.status,
            next=record.node,
            events=events,
        )

    def step(self) -> StepResult:
        """Sync twin of :meth:`astep`."""
        return run_sync(self.astep())

    async def arun(self) -> Run:
        """Drive the run until it pauses for approval or finishes; returns this run."""
        async for _ in self._drive(max_nodes=None):
            pass
        return self

    def run(self) -> Run:
        """Sync twin of :meth:`arun`."""
        return run_sync(self.arun())

    def astream(self) -> AsyncIterator[Event]:
        """Drive the run to the next pause or the end, yielding events as they happen."""
        return self._drive(max_nodes=None)

    def stream(self) -> Iterator[Event]:
        """Sync twin of :meth:`astream`."""
        return iterate_sync(self._drive(max_nodes=None))

    async def _drive(self, max_nodes: int | None) -> AsyncIterator[Event]:
        from agentnb.graph.driver import Driver

        driver = Driver(self)
        async for event in driver.drive(max_nodes):
            yield event


def _check_compatible(workflow: Workflow, record: RunRecord) -> None:
    if record.node != END and record.node not in workflow.nodes:
        raise IncompatibleWorkflow(
            record.run_id, f"its next node {record.node!r} is not in workflow {workflow.name!r}"
        )
    if record.graph != workflow.name:
        raise IncompatibleWorkflow(
            record.run_id, f"it belongs to workflow {record.graph!r}, not {workflow.name!r}"
        )
    if record.shape != workflow.shape:
        raise IncompatibleWorkflow(
            record.run_id,
            "the workflow's nodes, edges or interrupts changed since the run started "
            f"(shape {record.shape} then, {workflow.shape} now)",
        )
