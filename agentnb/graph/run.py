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
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentnb._aio import alone, iterate_sync, run_sync
from agentnb._display import Drawable, HasTimeline, Viewable
from agentnb._json import check, dumps, loads
from agentnb.errors import (
    AgentnbError,
    ConflictingEdit,
    IncompatibleWorkflow,
    InvalidDecision,
    InvalidState,
    TaskNotNamed,
)
from agentnb.graph.builder import END
from agentnb.graph.state import apply_delta, json_copy
from agentnb.graph.superstep import Frontier, plan
from agentnb.store.base import (
    CheckpointWrite,
    DecisionEdit,
    check_decision,
    new_owner,
    pending_digest,
)
from agentnb.store.chains import Chain
from agentnb.store.history import History
from agentnb.store.policy import RunPolicy
from agentnb.store.records import (
    Decision,
    Effect,
    Event,
    EventType,
    PendingTask,
    RunRecord,
    Status,
)

if TYPE_CHECKING:
    from agentnb.graph.driver import Position
    from agentnb.graph.workflow import Workflow
    from agentnb.store.base import Checkpointer

__all__ = ["NodeContext", "Run", "StepResult"]

_BUILTIN_TYPES = frozenset(t.value for t in EventType)
_NOT_DONE = object()  # ctx.once found no recorded result


class NodeContext:
    """What a node ``fn(state, ctx)`` knows about where it runs.

    Attributes:
        run_id: the run's id.
        step: how many supersteps ran before this one (0 for the first).
        node: this node's name.
        task_id: this task's id in its superstep: the node's name, or ``node[i]`` for the
            i-th :class:`~agentnb.Send` to it.
        idempotency_key: stable for this run, superstep and task — the same when the task
            is re-executed after a crash — so a payment API can de-duplicate the call.
    """

    __slots__ = (
        "_asked",
        "_sink",
        "_store",
        "_stream",
        "idempotency_key",
        "node",
        "run_id",
        "step",
        "task_id",
    )

    def __init__(
        self,
        store: Checkpointer,
        run_id: str,
        node: str,
        step: int,
        sink: Callable[[str, dict[str, Any]], None],
        task_id: str | None = None,
        stream: Callable[[str, Any], None] | None = None,
    ) -> None:
        self._store = store
        self._stream = stream
        self._sink = sink  # records an event with the task in flight
        self.run_id = run_id
        self.node = node
        self.step = step
        self.task_id = task_id or node
        self.idempotency_key = f"{run_id}:{step}:{self.task_id}"
        self._asked = 0

    def once(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run the side effect ``fn()`` at most once for this step; return its result.

        The result (JSON) is recorded in the checkpointer's ledger under
        ``idempotency_key`` + ``name``. If the step runs again — a retry, or a worker
        restarted after a crash — the recorded result is returned and ``fn`` is not
        called. A crash between ``fn`` returning and the record being written can still
        repeat it: pass ``ctx.idempotency_key`` to the service too, so it de-duplicates.
        """
        key, found = self._recorded(name)
        if found is not _NOT_DONE:
            return found
        result = fn()
        if inspect.isawaitable(result):
            close = getattr(result, "close", None)
            if close is not None:
                close()
            raise TypeError(f"ctx.once({name!r}, fn): fn is async; use await ctx.aonce(...)")
        return self._record(key, name, result)

    async def aonce(self, name: str, fn: Callable[[], Any]) -> Any:
        """Async twin of :meth:`once`: ``fn()`` may return an awaitable. The ledger is
        read and written through the store's awaitable twins (the loop goes on meanwhile)."""
        key = self._key(name)
        found = self._replayed(name, key, await self._store.arecorded_effect(key))
        if found is not _NOT_DONE:
            return found
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        text = dumps(result, root=f"ctx.once({name!r}) result")
        stored = await self._store.arecord_effect(
            key, run_id=self.run_id, step=self.step, node=self.node, name=name, result_json=text
        )
        return self._done(name, key, stored)

    def _key(self, name: str) -> str:
        if not isinstance(name, str) or not name:
            raise AgentnbError(f"ctx.once({name!r}, ...): name the side effect with a string")
        return f"{self.idempotency_key}:{name}"

    def _replayed(self, name: str, key: str, stored: str | None) -> Any:
        if stored is None:  # a recorded None is the JSON text "null", not None
            return _NOT_DONE
        self._sink(EventType.EFFECT_REPLAYED, {"name": name, "key": key})
        return loads(stored)

    def _recorded(self, name: str) -> tuple[str, Any]:
        key = self._key(name)
        return key, self._replayed(name, key, self._store.recorded_effect(key))

    def _record(self, key: str, name: str, result: Any) -> Any:
        text = dumps(result, root=f"ctx.once({name!r}) result")
        stored = self._store.record_effect(
            key, run_id=self.run_id, step=self.step, node=self.node, name=name, result_json=text
        )
        return self._done(name, key, stored)

    def _done(self, name: str, key: str, stored: str) -> Any:
        self._sink(EventType.EFFECT, {"name": name, "key": key})
        return loads(stored)

    def interrupt(self, question: Any) -> Any:
        """Ask a person a question; return their answer.

        ``question`` is ``{"question": "...", "schema": {JSON Schema}}`` (a bare string is
        a question without a schema). The first time, the run pauses here: the node stops,
        the run is ``pending``, and ``run.respond(value, by=...)`` records the answer
        (exactly once, audited, checked against the schema).

        On resume the node runs again **from its start**: everything before this call
        happens again, except what went through :meth:`once`, which returns its recorded
        result — so put side effects before a question in ``ctx.once``. This call then
        returns the recorded answer. A node may ask several questions; they are answered
        in order, one pause each.
        """
        from agentnb.graph.questions import Asked, check_question

        asked = check_question(question)
        check(asked, root="ctx.interrupt question")
        index = self._asked
        self._asked += 1
        key = f"{self.idempotency_key}:interrupt:{index}"
        stored = self._store.recorded_effect(key)
        if stored is None:
            raise Asked(asked, key, index)
        return loads(stored)

    def emit_each(self, kind: str, items: Iterable[Any]) -> Iterator[Any]:
        """Emit every item of ``items`` as it comes, and hand it on to the node.

        ``for token in ctx.emit_each("token", llm.stream(prompt)): text += token``
        streams an LLM's tokens out while the node keeps them too.
        """
        for item in items:
            self.emit(kind, item)
            yield item

    async def aemit_each(self, kind: str, items: AsyncIterable[Any]) -> AsyncIterator[Any]:
        """Async-iterator form of :meth:`emit_each`, for an async node.

        ``async for token in ctx.aemit_each("token", llm.astream(prompt)): ...``: each
        token reaches ``run.astream(mode="custom")`` while the node still runs.
        """
        async for item in items:
            self.emit(kind, item)
            yield item

    def emit(self, kind: str, data: Any = None) -> None:
        """Stream ``data`` (any JSON value: a token, a progress dict) out of the running node.

        A reader of ``run.astream(mode="custom")`` gets it at once, as an
        :class:`~agentnb.graph.streams.Emitted`. The store gets one event per kind at the
        end of the step, ``{"data": [...], "count": n}`` (bounded: see
        :mod:`agentnb.graph.streams`), or nothing with ``compile(keep_streams=False)``.
        """
        if kind in _BUILTIN_TYPES or not isinstance(kind, str) or not kind:
            raise AgentnbError(
                f"ctx.emit({kind!r}): custom event types must be non-empty strings other "
                f"than the built-in ones ({', '.join(sorted(_BUILTIN_TYPES))})"
            )
        check(data, root=f"ctx.emit({kind!r}) data")
        if self._stream is None:
            self._sink(kind, {"data": [data], "count": 1})
        else:
            self._stream(kind, data)


@dataclass(frozen=True)
class StepResult:
    """What one :meth:`Run.step` did."""

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


class Run(Drawable, HasTimeline, Viewable):
    """A run of a workflow. Create with ``workflow.start()``, re-attach with ``attach()``."""

    def __init__(self, workflow: Workflow, record: RunRecord) -> None:
        self.workflow = workflow
        self.run_id = record.run_id
        self.owner = new_owner()
        self._store = workflow.checkpointer
        self._record = record
        self._state: dict[str, Any] = {}
        self._frontier = Frontier.at(record.node)
        self._chain: Chain | None = None
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
        tasks: dict[str, Any] | None = None,
        status: Status = Status.RUNNING,
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
        run = cls(workflow, record)
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

    @classmethod
    def _attach(cls, workflow: Workflow, run_id: str) -> Run:
        record = workflow.checkpointer.get_run(run_id)
        _check_compatible(workflow, record)
        return cls(workflow, record)

    def _load_state(self, record: RunRecord) -> None:
        cp = self._store.checkpoint(record.run_id)
        self._state = cp.state
        self._frontier = Frontier.at(cp.node, cp.tasks)
        self._record = record
        self._chain = None  # the next checkpoint is a snapshot: no chain is assumed

    def _adopt(self, position: Position) -> None:
        """Take over where a driver left the run."""
        self._record = position.record
        self._state = position.state
        self._frontier = position.frontier
        self._chain = position.chain

    def _sync(self, record: RunRecord) -> None:
        """Adopt ``record``; reload the state only if something was written to the run
        since (another worker moved it, or a decision — perhaps with an edited state)."""
        if record.step != self._record.step or record.seq != self._record.seq:
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
        task: str | None = None,
        update: dict[str, Any] | None = None,
    ) -> Decision:
        """Record ``approved`` or ``rejected`` for the paused boundary (exactly once).

        When a superstep holds several tasks (``run.pending()``), each is decided on its
        own: name it with ``task``. The run continues once all are approved; rejecting
        one rejects the run. ``update`` edits the state before the node runs (see
        :meth:`approve`).
        """
        edit = None
        inside = self._inside(task)
        if inside is not None:  # the pause is in a subgraph: decide it there first
            child, name = inside
            if child.record.status == Status.PENDING:
                child.decide(decision, by=by, comment=comment, update=update)
            update = None
            task = name if self.pending() else None
        if update is not None and decision == "approved":
            if task is not None or self.pending():  # held tasks: the edit is this one's input
                edit, expected_digest = self._task_edit(task, update, expected_digest)
            else:
                edit, expected_digest = self._edit(update, expected_digest)
        return self._decide(decision, by, comment, expected_digest, task, edit)

    def _inside(self, task: str | None) -> tuple[Run, str] | None:
        """The child run the current pause is in (and the task it runs as), if any."""
        paused = self._questions("child")
        if task is not None:
            paused = {t: p for t, p in paused.items() if t == task}
        if len(paused) != 1:
            return None
        name, pause = next(iter(paused.items()))
        child = Run._attach(self.workflow._child(pause["node"]), pause["child"])
        return child, name

    def _decide(
        self,
        decision: str,
        by: str,
        comment: str | None,
        expected_digest: str | None,
        task: str | None,
        edit: DecisionEdit | None,
    ) -> Decision:
        seen = self._record.seq
        decision_record = self._store.decide(
            self.run_id,
            decision,
            by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            edit=edit,
            identity=self.workflow.identity(),
            checks=self.workflow.policy_checks,
        )
        record = self._store.get_run(self.run_id)
        if edit is not None and edit.state_json is not None:
            self._load_state(record)  # the approved state is the pending step's checkpoint
            self._chain = Chain.after(edit.state_json)  # stored whole by the decision
        else:
            self._sync(record)
        if self.workflow.listeners:
            self.workflow._notify(self._store.events(self.run_id, after=seen))
        return decision_record

    def _edit(
        self, update: dict[str, Any], expected_digest: str | None
    ) -> tuple[DecisionEdit, str | None]:
        """The edited state an approval carries, bound to the digest of what was shown."""
        _check_update(update)
        record = self._store.get_run(self.run_id)
        checkpoint = self._store.checkpoint(self.run_id)
        state = apply_delta(checkpoint.state, update, self.workflow.reducers)
        state_json = dumps(state, root="approved state")
        shown = expected_digest or record.pending_digest
        edit = DecisionEdit(
            state_json=state_json,
            tasks_json=None if checkpoint.tasks is None else dumps(checkpoint.tasks),
            update=update,
            approved_digest=pending_digest(self.run_id, record.node, record.step, state_json),
        )
        return edit, shown

    def _task_edit(
        self, task: str | None, update: dict[str, Any], expected_digest: str | None
    ) -> tuple[DecisionEdit, str | None]:
        """The edit of one held task's input, bound to the digest that task was shown.

        Refused before anything is stored when it replaces a key (one without a reducer)
        that a task which finished before the pause wrote: that result would overwrite
        the edit, or the edit the result. The store refuses the same clash with another
        held task's edit, inside the decision's transaction.
        """
        _check_update(update)
        waiting = self.pending()
        if task is None and len(waiting) > 1:
            raise TaskNotNamed(self.run_id, [t.task_id for t in waiting])
        held = next((t for t in waiting if task in (None, t.task_id)), None)
        if held is None:  # not pending (any more): the store refuses it, and audits that
            return DecisionEdit(update=update), expected_digest
        reducers = self.workflow.reducers
        checkpoint = self._store.checkpoint(self.run_id)
        frontier = Frontier.at(checkpoint.node, checkpoint.tasks)
        given = next(
            (t.payload for t in plan(self.workflow, frontier) if t.id == held.task_id), None
        )
        shown = {**checkpoint.state, **(given or {})}  # a Send task's input has its payload
        state_json = dumps(apply_delta(shown, update, reducers), root="approved state")
        # A key the task's Send payload carries edits the payload: the task's own input,
        # not the superstep's state, so no other task can clash with it.
        replaces = tuple(k for k in update if k not in reducers and k not in (given or {}))
        for saved in self._store.pending_writes(self.run_id, checkpoint.step):
            clash = next((k for k in replaces if k in saved.delta), None)
            if clash is not None and saved.task_id != held.task_id:
                other = f"task {saved.task_id!r} (finished before the pause)"
                raise ConflictingEdit(self.run_id, held.task_id, clash, other)
        edit = DecisionEdit(
            update=update,
            approved_digest=pending_digest(self.run_id, held.task_id, checkpoint.step, state_json),
            replaces=replaces,
        )
        return edit, expected_digest or held.digest

    def approve(
        self,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        update: dict[str, Any] | None = None,
    ) -> Decision:
        """Approve the pending node (or held ``task``); ``step()``/``run()`` then runs it.

        ``update`` approves with edits: those keys (JSON, merged by the reducers) change
        the state before the node runs. The decision is bound to the state shown (the
        pending digest, or ``expected_digest``), and the audit keeps the edit and the
        digest of the state approved.

        When a superstep holds several tasks, the edit is the named ``task``'s input and
        a write of the resumed superstep: that task runs on the state with ``update``
        merged in, and ``update`` is merged into the superstep's result (before the
        tasks' results); a key a Send task's payload carries edits that task's input
        only. The other tasks run on the state they were shown. An edit that
        replaces a key without a reducer which another task of the superstep writes too
        raises :class:`~agentnb.errors.ConflictingEdit`, and nothing is decided.
        """
        return self.decide(
            "approved",
            by=by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            update=update,
        )

    def reject(
        self,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
    ) -> Decision:
        """Reject the pending node: the run ends ``rejected`` and the node never runs."""
        return self.decide(
            "rejected", by=by, comment=comment, expected_digest=expected_digest, task=task
        )

    @property
    def question(self) -> dict[str, Any] | None:
        """The question the run waits on (``ctx.interrupt``), or ``None``.

        ``{"question": ..., "schema": ..., "task": ..., "digest": ...}``.
        """
        record = self.record
        if record.status != Status.PENDING:
            return None
        asked = self._questions()
        if not asked:
            inside = self._inside(None)
            return None if inside is None else inside[0].question
        return next(iter(asked.values()), None)

    def _questions(self, when: str = "input") -> dict[str, dict[str, Any]]:
        """The unanswered questions (or the paused subgraphs, ``when="child"``) of the
        current pause, by task id."""
        from agentnb.graph.questions import waiting

        return {t: q for t, q in waiting(self._store, self.run_id).items() if q["when"] == when}

    def respond(
        self,
        value: Any,
        *,
        by: str,
        comment: str | None = None,
        task: str | None = None,
        expected_digest: str | None = None,
    ) -> Decision:
        """Answer the node's question (``ctx.interrupt``); the run then continues with it.

        Checked against the question's schema first: a mismatch raises
        :class:`~agentnb.errors.InvalidAnswer` and the run stays paused. Recorded exactly
        once and audited like an approval; on resume the node runs again from its start
        and ``ctx.interrupt`` returns ``value``. The CLI's ``agentnb respond`` is the same
        decision.

        Raises:
            InvalidAnswer: ``value`` does not fit the schema.
            TaskNotNamed: several questions wait; name one with ``task``.
            NoQuestion: the run waits for an approval, not an answer.
            ApprovalNotPending: the run is not waiting for an answer (answered already?).
        """
        from agentnb.graph.questions import respond

        check_decision("approved", by)
        inside = self._inside(task)
        if inside is not None:  # the question is in a subgraph: answer it there
            child, name = inside
            if child.record.status == Status.PENDING:
                child.respond(value, by=by, comment=comment)
            held = name if self.pending() else None
            return self._decide("approved", by, comment, expected_digest, held, None)
        seen = self._record.seq
        decision = respond(
            self._store,
            self.run_id,
            value,
            by=by,
            comment=comment,
            task=task,
            expected_digest=expected_digest,
            identity=self.workflow.identity(),
            checks=self.workflow.policy_checks,
        )
        self._sync(self._store.get_run(self.run_id))
        if self.workflow.listeners:
            self.workflow._notify(self._store.events(self.run_id, after=seen))
        return decision

    async def arespond(
        self,
        value: Any,
        *,
        by: str,
        comment: str | None = None,
        task: str | None = None,
        expected_digest: str | None = None,
    ) -> Decision:
        """Async twin of :meth:`respond` (off the event loop, as every store call:
        :meth:`~agentnb.store.base.Checkpointer.offload`)."""
        return await self._store.offload(
            self.respond,
            value,
            by=by,
            comment=comment,
            task=task,
            expected_digest=expected_digest,
        )

    def children(self) -> list[Run]:
        """The runs of this run's subgraph nodes (each may have children of its own)."""
        from agentnb.graph.subgraph import children

        return children(self)

    def pending(self) -> list[PendingTask]:
        """The tasks of this superstep awaiting approval, when an interrupt holds several.

        Empty for a run paused at one boundary (approve it without naming a task).
        """
        return [t for t in self._store.pending_tasks(self.run_id) if t.status == "pending"]

    async def adecide(
        self,
        decision: str,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        update: dict[str, Any] | None = None,
    ) -> Decision:
        """Async twin of :meth:`decide`.

        The database call runs off the event loop (:meth:`~agentnb.store.base.
        Checkpointer.offload`): a decision may wait for another process's write (up to the
        store's busy timeout), and the event loop must not.
        """
        return await self._store.offload(
            self.decide,
            decision,
            by=by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            update=update,
        )

    async def aapprove(
        self,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        update: dict[str, Any] | None = None,
    ) -> Decision:
        """Async twin of :meth:`approve`."""
        return await self.adecide(
            "approved",
            by=by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            update=update,
        )

    async def areject(
        self,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
    ) -> Decision:
        """Async twin of :meth:`reject`."""
        return await self.adecide(
            "rejected", by=by, comment=comment, expected_digest=expected_digest, task=task
        )

    # -- driving -------------------------------------------------------------------------

    async def astep(self) -> StepResult:
        """Execute one superstep (one node, in a linear workflow), or stop at an interrupt."""
        from agentnb.graph.driver import Driver

        driver = Driver(self.workflow, self.owner, self._position())
        try:
            events = [e async for e in driver.drive(1) if isinstance(e, Event)]
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
        async for _ in self._drive(max_nodes=None):
            pass
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
    ) -> AsyncIterator[Any]:
        from agentnb.graph.driver import Driver

        driver = Driver(self.workflow, self.owner, self._position())
        driver.halt = halt
        if mode == "custom":
            from agentnb.graph.streams import Emitted, Live

            driver.live = Live()
        try:
            async for event in driver.drive(max_nodes):
                if mode == "events" or isinstance(event, Emitted):
                    yield event
        finally:
            self._adopt(driver.position)

    def _position(self) -> Position:
        from agentnb.graph.driver import Position

        return Position(self._record, self._state, self._frontier, self._chain)


def _check_update(update: Any) -> None:
    """An approval's edit is a dict of JSON state values (refused before any write)."""
    if not isinstance(update, dict):
        raise InvalidDecision(f"update must be a dict of state keys, not {update!r}")
    try:
        check(update, root="update")
    except InvalidState as exc:
        raise InvalidDecision(f"{exc}; nothing was decided") from exc


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
