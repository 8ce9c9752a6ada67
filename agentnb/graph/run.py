"""``Run``: one execution of a workflow, driven step by step or to the next pause.

A ``Run`` is a handle on a row in the checkpointer, not the owner of the truth: every call
that drives it first takes the run's lease in the database (so two kernels never drive one
run at once), re-reads where the run stands, executes, and writes each step atomically.
That is what lets a run be paused in one process, decided from the CLI, and continued in
another after a restart.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentnb._aio import alone, iterate_sync, run_sync
from agentnb._display import Drawable, HasTimeline, Viewable
from agentnb._json import check, dumps, loads
from agentnb.errors import AgentnbError, RunNotFound
from agentnb.graph.approvals import Approvals
from agentnb.graph.context import NodeContext
from agentnb.graph.state import apply_delta, json_copy
from agentnb.graph.superstep import plan
from agentnb.store.base import CheckpointWrite
from agentnb.store.chains import Chain
from agentnb.store.history import History
from agentnb.store.policy import RunPolicy
from agentnb.store.records import Decision, Effect, Event, EventType, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow
    from agentnb.store.base import Checkpointer

__all__ = ["NodeContext", "Run", "StepResult"]


@dataclass(frozen=True)
class StepResult:
    """What one :meth:`Run.step` did.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = StateGraph("count").add_node("one", lambda state: {"n": 1})
        >>> graph.set_entry_point("one")
        StateGraph('count', nodes=['one'])
        >>> result = graph.compile().start({}).step()
        >>> result.node, result.delta, result.next, str(result.status)
        ('one', {'n': 1}, 'END', 'completed')
    """

    run_id: str
    node: str | None
    """The (first) node that executed, or ``None`` when nothing could (pending, ...)."""
    delta: dict[str, Any] | None
    """What that node returned, when it was the only task; else see ``tasks``."""
    status: Status
    next: str
    """The (first) node that runs next (``END`` when finished)."""
    events: list[Event] = field(repr=False)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every task this superstep ran, ``task id -> delta``, in merge order (a task id is
    the node's name, or ``node[i]`` for the i-th Send to it)."""
    recovered: tuple[str, ...] = ()
    """Tasks of this superstep that had finished before a crash: their saved results were
    merged and they did not run again."""

    def __str__(self) -> str:
        if self.node is None:
            what = f"nothing ran: the run is {self.status}"
            if self.status == Status.PENDING:
                what += f", waiting for approval before {self.next!r}"
            return what
        if len(self.tasks) > 1 or self.recovered:
            ran = ", ".join(repr(t) for t in self.tasks)
            saved = f" (saved before: {', '.join(self.recovered)})" if self.recovered else ""
            return f"ran {ran}{saved} → {self.next!r}  [{self.status}]"
        return f"ran {self.node!r} → {self.next!r}  delta={self.delta}  [{self.status}]"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))


class Run(Approvals, Drawable, HasTimeline, Viewable):
    """A run of a workflow. Create with ``workflow.start()``, re-attach with ``attach()``.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = (
        ...     StateGraph("refund")
        ...     .add_node("plan", lambda state: {"amount": 800})
        ...     .add_node("pay", lambda state: {"paid": state["amount"]})
        ...     .add_edge("plan", "pay")
        ...     .set_entry_point("plan")
        ...     .add_interrupt_before("pay")  # a person decides before pay runs
        ... )
        >>> run = graph.compile().start({}, run_id="r1")  # start runs nothing yet
        >>> print(run.step())
        ran 'plan' → 'pay'  delta={'amount': 800}  [pending]
        >>> run
        <Run r1 of 'refund': pending at 'pay', step 1/25>
        >>> run.approve(by="ada").accepted
        True
        >>> run.run()
        <Run r1 of 'refund': completed at 'END', step 2/25>
        >>> run.state
        {'amount': 800, 'paid': 800}
    """

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
        tasks: dict[str, Any] | None = None,
        status: Status = Status.RUNNING,
        replace: bool = False,
    ) -> Run:
        check(state, root="state")
        state_json = dumps(state)
        if replace and run_id:
            _replace(workflow.checkpointer, run_id)
        run_id = run_id or os.urandom(16).hex()
        node = node or workflow.entry
        now = time.time()
        record = RunRecord(
            run_id=run_id,
            graph=workflow.name,
            shape=workflow.shape,
            status=status,
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
        checkpoint = CheckpointWrite(
            step, node, state_json, None if tasks is None else dumps(tasks)
        )
        workflow.checkpointer.create_run(
            record,
            checkpoint,
            [started],
            started_by=started_by,
            policies=workflow.policies,
        )
        if workflow.listeners:
            workflow._notify([started])
        # The state and tasks as a new copy (the caller keeps theirs), not read back.
        tasks_json = checkpoint.tasks_json
        loaded = (loads(state_json), None if tasks_json is None else loads(tasks_json))
        run = cls(workflow, record, loaded=loaded)
        run._chain = Chain.after(state_json)  # its checkpoint is the snapshot just written
        return run

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
            tasks=checkpoint.tasks,
        )

    # -- what a person looks at ----------------------------------------------------------

    @property
    def status(self) -> Status:
        return self.record.status

    @property
    def node(self) -> str:
        """The node that runs next (or is awaiting approval); ``END`` once finished."""
        return self.record.node

    @property
    def steps(self) -> int:
        """How many supersteps have executed (of ``record.max_steps``); in a linear
        workflow, how many nodes."""
        return self.record.step

    @property
    def tasks(self) -> list[str]:
        """The ids of the tasks the next superstep runs, in merge order."""
        self._sync(self._store.get_run(self.run_id))
        return [t.id for t in plan(self.workflow, self._frontier)]

    @property
    def state(self) -> dict[str, Any]:
        """A copy of the current state."""
        self._sync(self._store.get_run(self.run_id))
        return json_copy(self._state)  # type: ignore[no-any-return]

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

    def history(self) -> History:
        """Every checkpoint, oldest first: the state after 0, 1, 2, ... nodes.

        Listed without decoding a state; each item's ``state`` is read when asked for.
        """
        return History(self._store, self._store.list_checkpoints(self.run_id))

    def decisions(self) -> list[Decision]:
        """The audit of decisions on this run, refused attempts included."""
        return self._store.decisions(self.run_id)

    def effects(self) -> list[Effect]:
        """The side effects recorded through ``ctx.once``, oldest first."""
        return self._store.effects(self.run_id)

    def __repr__(self) -> str:
        # The row as this handle last saw it (``status`` reads the store): a repr does no
        # I/O. Python 3.11's asyncio runner formats a finished main task's result twice at
        # every sync call (run.run() returns the run), which read the run's row twice.
        r = self._record
        worker = f", worker {r.lease_owner}" if r.lease_owner else ""
        return (
            f"<Run {self.run_id[:12]} of {r.graph!r}: {r.status} at {r.node!r}, "
            f"step {r.step}/{r.max_steps}{worker}>"
        )

    def children(self) -> list[Run]:
        """The runs of this run's subgraph nodes (each may have children of its own)."""
        from agentnb.graph.subgraph import children

        return children(self)

    # -- driving -------------------------------------------------------------------------

    async def astep(self) -> StepResult:
        """Execute one superstep (one node, in a linear workflow), or stop at an interrupt."""
        from agentnb.graph.driver import Driver

        driver = Driver(self.workflow, self.owner, self._position())
        events: list[Event] = []
        try:
            async for event in driver.drive(1):
                if isinstance(event, Event):
                    events.append(event)
        finally:
            self._adopt(driver.position)
        started = [e for e in events if e.type == EventType.NODE_START]
        record = self._record
        ran = driver.ran
        first = started[0].node if started else None
        if first is None and driver.recovered:
            first = next((e.node for e in events if e.type == EventType.STATE_UPDATE), None)
        tasks: dict[str, dict[str, Any]] = {}
        for e in events:
            if e.type == EventType.STATE_UPDATE:
                task = str(e.payload.get("task", e.node))
                if task in ran:
                    tasks[task] = e.payload["delta"]
        return StepResult(
            run_id=self.run_id,
            node=first,
            delta=next(iter(tasks.values())) if len(tasks) == 1 else None,
            status=record.status,
            next=record.node,
            events=events,
            tasks=tasks,
            recovered=tuple(driver.recovered),
        )

    def step(self) -> StepResult:
        """Sync twin of :meth:`astep`."""
        return run_sync(alone(self.astep()))

    async def arun(self) -> Run:
        """Drive the run until it pauses for approval or finishes; returns this run."""
        from agentnb.graph.driver import Driver

        driver = Driver(self.workflow, self.owner, self._position())
        try:
            async for _ in driver.drive(None):
                pass
        finally:
            self._adopt(driver.position)
        return self

    def run(self) -> Run:
        """Sync twin of :meth:`arun`."""
        return run_sync(alone(self.arun()))

    def astream(self, *, mode: str = "events") -> AsyncIterator[Any]:
        """Drive the run to the next pause or the end, yielding as things happen.

        ``mode="events"`` yields the run's :class:`~agentnb.Event` records;
        ``mode="custom"`` yields what nodes emit (``ctx.emit``) while they run, each an
        :class:`~agentnb.graph.streams.Emitted`.
        """
        if mode not in ("events", "custom"):
            raise AgentnbError(f"astream(mode={mode!r}): use mode='events' or mode='custom'")
        return self._drive(max_nodes=None, mode=mode)

    def stream(self, *, mode: str = "events") -> Iterator[Any]:
        """Sync twin of :meth:`astream`."""
        return iterate_sync(self.astream(mode=mode))

    async def _drive(
        self,
        max_nodes: int | None,
        mode: str = "events",
        halt: Callable[[], bool] | None = None,
        leased: bool = False,
    ) -> AsyncIterator[Any]:
        from agentnb.graph.driver import Driver

        driver = Driver(self.workflow, self.owner, self._position())
        driver.halt, driver.leased = halt, leased
        if mode == "custom":
            from agentnb.graph.streams import Emitted, Live

            driver.live = Live()
        try:
            async for event in driver.drive(max_nodes):
                if mode == "events" or isinstance(event, Emitted):
                    yield event
        finally:
            self._adopt(driver.position)


def _replace(store: Checkpointer, run_id: str) -> None:
    """Delete run ``run_id`` (if there is one) and its subgraph runs, with their audit, for
    a new run of that id (``start(..., replace=True)``).

    The run goes first, in one transaction that refuses a run held by a live lease
    (:class:`~agentnb.errors.RunActive`, nothing deleted); then its children, which a new
    run of the same id would otherwise find and continue.
    """
    with contextlib.suppress(RunNotFound):  # nothing to replace
        store.delete_run(run_id, include_audit=True, awaiting=True)
    prefix = f"{run_id}/"
    for record in store.list_runs():
        if record.run_id.startswith(prefix):
            with contextlib.suppress(RunNotFound):  # deleted meanwhile, by another process
                store.delete_run(record.run_id, include_audit=True, awaiting=True)
