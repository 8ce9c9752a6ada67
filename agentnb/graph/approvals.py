"""``Approvals``: the decisions a run's handle makes — approve, reject, respond, with edits.

Every decision is the store's (exactly once, audited, bound to the digest of what was
shown); this builds what it carries (an edited state, a held task's edit), decides a
pause inside a subgraph from the parent, and brings the handle up to date afterwards.
"""

from __future__ import annotations

from typing import Any, Self

from agentnb._json import check, dumps
from agentnb.errors import ConflictingEdit, InvalidDecision, InvalidState, TaskNotNamed
from agentnb.graph.handle import RunHandle
from agentnb.graph.state import apply_delta
from agentnb.graph.superstep import Frontier, plan
from agentnb.store.base import DecisionEdit, check_decision, pending_digest
from agentnb.store.chains import Chain
from agentnb.store.records import Decision, PendingTask, RunRecord, Status

__all__ = ["Approvals"]


class Approvals(RunHandle):
    """Deciding a run's pauses: :class:`~agentnb.graph.run.Run`'s decision methods."""

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

    def _inside(self, task: str | None) -> tuple[Self, str] | None:
        """The child run the current pause is in (and the task it runs as), if any."""
        paused = self._questions("child")
        if task is not None:
            paused = {t: p for t, p in paused.items() if t == task}
        if len(paused) != 1:
            return None
        name, pause = next(iter(paused.items()))
        child = self._attach(self.workflow._child(pause["node"]), pause["child"])
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
        before = self._record
        seen = before.seq
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
        elif _decided_as_seen(before, decision_record, record):
            self._record = record  # its entry holds no checkpoint: the state is as it was
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

        The database call runs off the event loop
        (:meth:`~agentnb.Checkpointer.offload`): a decision may wait for another process's
        write (up to the store's busy timeout), and the event loop must not.
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


def _decided_as_seen(before: RunRecord, decision: Decision, after: RunRecord) -> bool:
    """Whether ``decision`` was made on the very pause ``before`` shows: accepted, bound
    to its pending digest (which covers the run, node, step and state) — so the state in
    memory is the one decided on, and the decision's own entry, which carries no
    checkpoint, is all that was written since. Then the handle need not read the state
    again (the approval cycle's six statements of the reload)."""
    return (
        decision.accepted
        and before.status == Status.PENDING
        and before.pending_digest is not None
        and decision.pending_digest == before.pending_digest
        and (decision.node, decision.step) == (before.node, before.step)
        and after.step == before.step
    )


def _check_update(update: Any) -> None:
    """An approval's edit is a dict of JSON state values (refused before any write)."""
    if not isinstance(update, dict):
        raise InvalidDecision(f"update must be a dict of state keys, not {update!r}")
    try:
        check(update, root="update")
    except InvalidState as exc:
        raise InvalidDecision(f"{exc}; nothing was decided") from exc
