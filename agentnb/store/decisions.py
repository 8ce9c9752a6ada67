"""The decision rules, written once: what a decision asked of a paused run comes to.

Every backend decides the same way. Inside its decision transaction (SQL: one write
transaction holding the run's lock; memory: the store's lock) it reads the run's facts into
a :class:`Pause`, hands them with the decision asked for (an :class:`Ask`) to
:func:`verdict`, and writes what the :class:`Verdict` says — the run's new status, the
event, the held task's row, the edit — or, refused, only the audit row; it raises the
verdict's ``error`` once that row is kept. Nothing here reads or writes storage, so the
rules are read (and tested) in one place:

* a malformed decision (:func:`check_decision`, :func:`check_task_edit`) is refused before
  anything is stored, and not audited;
* a run that is unknown, or not pending, is refused; when a superstep holds several tasks,
  each is decided on its own (named with ``task`` unless only one waits);
* the interrupt's approver policy stored with the run is checked against the identity the
  process vouches for (:mod:`agentnb.store.policy`);
* a decision bound to a digest the pending state no longer has is stale;
* a held task's edit may not replace a key another held task's accepted edit replaces;
* a rejection carries no edit; rejecting one held task rejects the run, approving the last
  one approves it.

Example:
    >>> import dataclasses
    >>> from agentnb.identity import Identity
    >>> from agentnb.store.records import RunRecord
    >>> run = RunRecord("r1", "g", "", Status.PENDING, "pay", 1, 3, 25, 0.0, 0.0,
    ...                 pending_digest="d1")
    >>> ask = Ask("r1", "approved", "ada", who=Identity("ada"), expected_digest="d0")
    >>> verdict(Pause(run), ask, at=1.0).reason
    'stale: the pending state changed'
    >>> verdict(Pause(run), dataclasses.replace(ask, expected_digest="d1"), at=1.0).status
    <Status.APPROVED: 'approved'>
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentnb.errors import (
    AgentnbError,
    ApprovalNotPending,
    ConflictingEdit,
    InvalidDecision,
    NotAuthorized,
    PolicyUnavailable,
    RunNotFound,
    StaleApproval,
    TaskNotNamed,
)
from agentnb.identity import Identity
from agentnb.store.policy import PendingRun, PolicyCheck, RunPolicy, refusal
from agentnb.store.records import (
    DECISIONS,
    Decision,
    Event,
    EventType,
    PendingTask,
    RunRecord,
    Status,
)
from agentnb.store.writes import DecisionEdit

__all__ = [
    "Ask",
    "Pause",
    "Verdict",
    "approver_name",
    "check_decision",
    "check_task_edit",
    "decision_status",
    "edit_conflict",
    "verdict",
]


@dataclass(frozen=True, slots=True)
class Ask:
    """A decision asked of a run: what :meth:`Checkpointer.decide
    <agentnb.store.base.Checkpointer.decide>` was given, with the identity vouched for."""

    run_id: str
    decision: str
    by: str
    """The name given with the decision (kept for the audit; the policy checks ``who``)."""
    who: Identity
    comment: str | None = None
    expected_digest: str | None = None
    task: str | None = None
    edit: DecisionEdit | None = None
    checks: Mapping[str, PolicyCheck] = field(default_factory=dict)


def _no_after() -> str | None:
    return None


def _no_state() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class Pause:
    """The facts of a run a decision is checked against, read in the decision's transaction.

    ``after`` and ``state`` are read only when a rule needs them: the node the pause came
    after (its ``interrupted`` event says), when the run has an approver policy; the
    pending state, when a callable policy is asked.
    """

    run: RunRecord | None
    """The run's row (``None``: no such run)."""
    held: Sequence[PendingTask] = ()
    """The run's held tasks, decided or not."""
    policy: RunPolicy = field(default_factory=RunPolicy)
    after: Callable[[], str | None] = _no_after
    state: Callable[[], dict[str, Any]] = _no_state


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a decision comes to: the audit's line and, accepted, what it changes.

    ``node``, ``step`` and ``digest`` are the audit's (for a held task, ``node`` is the
    task's id and ``digest`` the digest it was shown, kept only when accepted).
    """

    ask: Ask
    at: float
    node: str | None
    step: int | None
    digest: str | None
    error: AgentnbError | None = None
    """The refusal (``None``: accepted), raised once the audit row is kept."""
    reason: str | None = None
    """The audit's reason for a refusal."""
    status: Status | None = None
    """The run's status once accepted (``None``: it stays pending, other tasks wait)."""
    event: Event | None = None
    """The ``approved``/``rejected`` event to append (accepted only)."""
    task: PendingTask | None = None
    """The held task as decided (accepted only, for a held task)."""
    edit: DecisionEdit | None = None
    """What the accepted approval carries (never a rejection)."""

    @property
    def accepted(self) -> bool:
        return self.error is None

    def record(self, decision_id: int) -> Decision:
        """The audit's line for this verdict, under ``decision_id``."""
        ask = self.ask
        return Decision(
            decision_id,
            ask.run_id,
            self.node,
            self.step,
            ask.decision,
            ask.by,
            ask.comment,
            ask.expected_digest,
            self.digest,
            accepted=self.accepted,
            reason=self.reason,
            at=self.at,
            edit=None if self.edit is None else self.edit.audit(),
            identity=ask.who,
        )


def check_decision(decision: str, by: str) -> None:
    """Refuse a malformed decision before anything touches storage."""
    if decision not in DECISIONS:
        raise InvalidDecision(
            f"decision must be 'approved' or 'rejected', not {decision!r}; "
            "nothing was changed (an unknown decision is never taken as an approval)"
        )
    if not isinstance(by, str) or not by.strip():
        raise InvalidDecision(
            "a decision needs the approver's name (by=... / --as NAME) for the audit"
        )


def check_task_edit(edit: DecisionEdit | None) -> None:
    """An approval of one held task edits that task's input (``update``), never the
    superstep's checkpoint (refused before any write)."""
    if edit is not None and edit.state_json is not None:
        raise InvalidDecision(
            "approving one of several held tasks edits that task's input, not the state "
            "of the superstep; nothing was changed. Pass the edit as run.approve(task=..., "
            "update={...})"
        )


def decision_status(decision: str) -> Status:
    return Status.APPROVED if decision == "approved" else Status.REJECTED


def edit_conflict(
    run_id: str, edit: DecisionEdit | None, task: str | None, held: Sequence[PendingTask]
) -> tuple[ConflictingEdit, str] | None:
    """Why an edit of held ``task`` is refused: it replaces a key (one without a reducer)
    that another held task's accepted edit replaces too. The error and the audit's reason."""
    if edit is None or not edit.replaces or task is None:
        return None
    for other in held:
        if other.task_id != task and other.status == "approved":
            clash = next((k for k in edit.replaces if k in other.replaces), None)
            if clash is not None:
                error = ConflictingEdit(run_id, task, clash, f"task {other.task_id!r}'s edit")
                return error, f"conflicting edit: {clash!r}"
    return None


def verdict(pause: Pause, ask: Ask, at: float) -> Verdict:
    """Apply the decision rules to ``ask`` at the run ``pause`` describes.

    Raises:
        InvalidDecision: an edit of the superstep's state while tasks are held (nothing
            is to be stored or audited).
    """
    waiting = [t for t in pause.held if t.status == "pending"]
    if ask.task is not None or waiting:  # a superstep's held tasks are decided one by one
        check_task_edit(ask.edit)
        return _held_verdict(pause, ask, at, waiting)
    run = pause.run
    if run is None:
        return Verdict(ask, at, None, None, None, RunNotFound(ask.run_id), "unknown run")
    refused = _refuser(ask, at, run.node, run.step, run.pending_digest)
    if run.status != Status.PENDING:
        return refused(ApprovalNotPending(ask.run_id, run.status, run.decided_by),
                       f"not pending: {run.status}")  # fmt: skip
    denied = _policy_refusal(pause, ask, run, run.node)
    if denied is not None:
        return refused(*denied)
    if ask.expected_digest is not None and ask.expected_digest != run.pending_digest:
        stale = StaleApproval(ask.run_id, ask.expected_digest, run.pending_digest or "")
        return refused(stale, "stale: the pending state changed")
    edit = ask.edit if ask.decision == "approved" else None
    event = _event(ask, run, run.node, at, {"digest": run.pending_digest}, edit)
    return Verdict(
        ask,
        at,
        run.node,
        run.step,
        run.pending_digest,
        status=decision_status(ask.decision),
        event=event,
        edit=edit,
    )


def _held_verdict(pause: Pause, ask: Ask, at: float, waiting: list[PendingTask]) -> Verdict:
    """The rules for one held task of a superstep."""
    run = pause.run
    task = ask.task
    if run is None:
        return Verdict(ask, at, task, None, None, RunNotFound(ask.run_id), "unknown run")
    if task is None and len(waiting) == 1:
        task = waiting[0].task_id
    found = next((t for t in waiting if t.task_id == task), None)
    refused = _refuser(ask, at, task, run.step if found is None else found.step, None)
    if task is None and len(waiting) > 1 and run.status == Status.PENDING:
        named = [t.task_id for t in waiting]
        return refused(TaskNotNamed(ask.run_id, named), "ambiguous: several tasks pending")
    if run.status != Status.PENDING or found is None:
        decided = next((t for t in pause.held if t.task_id == task), None)
        kept = decided is not None and decided.status != "pending"
        status = decided.status if decided is not None and kept else run.status
        by = run.decided_by if decided is None else decided.decided_by
        return refused(ApprovalNotPending(ask.run_id, status, by), f"not pending: {status}")
    denied = _policy_refusal(pause, ask, run, found.node)
    if denied is not None:
        return refused(*denied)
    if ask.expected_digest not in (None, found.digest):
        stale = StaleApproval(ask.run_id, ask.expected_digest or "", found.digest)
        return refused(stale, "stale: the pending state changed")
    edit = ask.edit if ask.decision == "approved" else None
    conflict = edit_conflict(ask.run_id, edit, found.task_id, pause.held)
    if conflict is not None:
        return refused(*conflict)
    decided_task = dataclasses.replace(
        found,
        status=ask.decision,
        decided_by=ask.by,
        decided_at=at,
        update=None if edit is None else edit.update,
        replaces=() if edit is None else edit.replaces,
    )
    settled = ask.decision == "rejected" or len(waiting) == 1
    event = _event(ask, run, found.node, at, {"digest": found.digest, "task": task}, edit)
    return Verdict(
        ask,
        at,
        task,
        found.step,
        found.digest,
        status=decision_status(ask.decision) if settled else None,
        event=event,
        task=decided_task,
        edit=edit,
    )


def _refuser(
    ask: Ask, at: float, node: str | None, step: int | None, digest: str | None
) -> Callable[[AgentnbError, str], Verdict]:
    def refused(error: AgentnbError, reason: str) -> Verdict:
        return Verdict(ask, at, node, step, digest, error, reason)

    return refused


def _event(
    ask: Ask,
    run: RunRecord,
    node: str,
    at: float,
    about: dict[str, Any],
    edit: DecisionEdit | None,
) -> Event:
    payload: dict[str, Any] = {"by": ask.by, "identity": ask.who.name, "comment": ask.comment}
    payload.update(about)
    if edit is not None:
        payload.update(edit.audit())
    kind = EventType.APPROVED if ask.decision == "approved" else EventType.REJECTED
    return Event(ask.run_id, run.seq + 1, run.step, kind, node, payload, at)


def _policy_refusal(
    pause: Pause, ask: Ask, run: RunRecord, node: str
) -> tuple[AgentnbError, str] | None:
    """The error and audit reason when the approver policy of the pause at ``node``
    refuses ``ask.who``."""
    policy = pause.policy
    if not policy.interrupts:
        return None
    applying = policy.applying(node, pause.after())
    if not applying:
        return None

    def pending() -> PendingRun:
        return PendingRun(
            run.run_id,
            run.graph,
            node,
            run.step,
            pause.state(),
            policy.started_by,
            ask.decision,
            ask.by,
        )

    found = refusal(applying, ask.who, policy.started_by, ask.checks, pending)
    if found is None:
        return None
    who = ask.who.name
    if found.unavailable is not None:
        unavailable = PolicyUnavailable(run.run_id, node, who, found.unavailable)
        return unavailable, f"policy unavailable: {found.reason}"
    return NotAuthorized(run.run_id, node, who, found.reason), f"not authorized: {found.reason}"


def approver_name(by: str | None, approver: str | None, where: str) -> str:
    """The approver's name, given as ``by=`` — or as ``approver=``, its deprecated spelling,
    which warns (:class:`DeprecationWarning`) and still works.

    Raises:
        InvalidDecision: both are given, and they differ.
    """
    if approver is None:
        return "" if by is None else by  # no name: check_decision refuses it
    warnings.warn(
        f"{where}(approver=...) is deprecated: the approver's name is given as by=. "
        f"Write {where}(..., by={approver!r}).",
        DeprecationWarning,
        stacklevel=3,
    )
    if by is not None and by != approver:
        raise InvalidDecision(
            f"{where} was given by={by!r} and approver={approver!r}; nothing was changed. "
            "Give the name once, as by="
        )
    return approver
