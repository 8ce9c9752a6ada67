"""The checkpointer contract every backend implements, and the shared rules they follow.

A checkpointer keeps, per run: one row (status, position, lease), every step's checkpoint
(so a run can be inspected at any past step), the event log, and an append-only audit of
decisions that includes refused attempts (never changed; deleted only by a retention that
asks for it, once its run is gone: :mod:`agentnb.store.retention`). All writes for one
step — checkpoint, events and the run row — happen in one transaction, so any process
reading the store sees a step completely or not at all.

Two invariants are decided by the database, never by a process's memory:

* **one worker drives a run at a time** — :meth:`Checkpointer.acquire` takes a lease with an
  expiry and bumps the run's *fence*; every later write names that fence and is refused
  (:class:`~agentnb.errors.LeaseLost`) once another worker has taken over;
* **a pending run is decided exactly once** — :meth:`Checkpointer.decide` is a conditional
  update of the pending row; the loser of a race gets
  :class:`~agentnb.errors.ApprovalNotPending` and its attempt is audited;
* **only an allowed identity decides** — the approver policy stored with the run when it
  started (:mod:`agentnb.store.policy`) is checked in the same transaction, against the
  identity the process vouches for (:mod:`agentnb.identity`), never the name typed.

Decisions, refused attempts and the effect ledger are committed durably (SQLite:
``synchronous=FULL`` at least, whatever the level for steps): they are what a person or a
payment relies on.

The calls the runtime makes while driving runs, and their awaitable twins
(:meth:`Checkpointer.acommit` for :meth:`Checkpointer.commit`, ...), are declared in
:mod:`agentnb.store.driving`; what a write carries is in :mod:`agentnb.store.writes`, the
decision rules every backend applies in :mod:`agentnb.store.decisions`, lease owners in
:mod:`agentnb.store.leases` (all re-exported here).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

from agentnb.identity import Identity, IdentityProvider, current_identity, vouched
from agentnb.store.decisions import check_decision, check_task_edit, decision_status, edit_conflict
from agentnb.store.driving import Driving
from agentnb.store.leases import DEFAULT_LEASE_SECONDS, new_owner, owner_is_dead
from agentnb.store.policy import ApproverPolicy, PolicyCheck, RunPolicy
from agentnb.store.records import Checkpoint, Decision, Effect, Event, EventType, RunRecord, Status
from agentnb.store.writes import CheckpointWrite, DecisionEdit, StepCommit, pending_digest

if TYPE_CHECKING:
    import datetime

    from agentnb.fsm.storage import MachineStore
    from agentnb.store.history import CheckpointInfo
    from agentnb.store.retention import Pruned

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "CheckpointWrite",
    "Checkpointer",
    "DecisionEdit",
    "StepCommit",
    "check_decision",
    "check_task_edit",
    "decision_status",
    "edit_conflict",
    "latest_interruptions",
    "new_owner",
    "owner_is_dead",
    "pending_digest",
]


class Checkpointer(Driving):
    """Where runs, checkpoints, events and decisions live. Use it as a context manager.

    Example:
        Any backend (here SQLite, in a temporary directory) answers the same questions:

        >>> import tempfile, pathlib
        >>> from agentnb import SqliteCheckpointer, StateGraph
        >>> graph = StateGraph("one").add_node("a", lambda state: {"x": 1}).set_entry_point("a")
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     with SqliteCheckpointer(pathlib.Path(folder) / "runs.sqlite3") as store:
        ...         _ = graph.compile(store).start({}, run_id="r1").run()
        ...         print(str(store.get_run("r1").status), len(store.events("r1")))
        completed 4
    """

    identity: IdentityProvider = staticmethod(current_identity)
    """Who this process is: called for runs started and decisions made through this store
    when the workflow has no provider of its own (``identity=`` on the constructor)."""

    def _vouch(self, identity: Identity | None) -> Identity:
        """The identity a decision or a start is recorded under."""
        return identity if identity is not None else vouched(self.identity)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release the connection. Further calls raise :class:`~agentnb.errors.StoreError`."""

    # -- runs ----------------------------------------------------------------------------

    @abstractmethod
    def create_run(
        self,
        run: RunRecord,
        checkpoint: CheckpointWrite,
        events: Sequence[Event],
        *,
        started_by: Identity | None = None,
        policies: Mapping[str, ApproverPolicy] | None = None,
    ) -> None:
        """Insert a new run with its first checkpoint and events; refuse an existing id.

        ``started_by`` and ``policies`` (keyed ``"before:NODE"``/``"after:NODE"``) are
        stored with it: its decisions are checked against them, by any process.
        """

    @abstractmethod
    def run_policy(self, run_id: str) -> RunPolicy:
        """Who started the run and its interrupts' approver policies (empty if none)."""

    @abstractmethod
    def list_runs(self, status: Status | str | None = None) -> list[RunRecord]:
        """Runs, newest first, optionally only those with ``status``."""

    # -- decisions -----------------------------------------------------------------------

    @abstractmethod
    def decide(
        self,
        run_id: str,
        decision: str,
        by: str | None = None,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        edit: DecisionEdit | None = None,
        identity: Identity | None = None,
        checks: Mapping[str, PolicyCheck] | None = None,
        approver: str | None = None,
    ) -> Decision:
        """Decide a pending run exactly once, and audit the attempt either way.

        An approval may carry an ``edit`` (edited state, or an answer): it is saved in the
        same transaction, and only if the decision is accepted.

        When a superstep holds several tasks, each is decided on its own: name it with
        ``task`` (it may be left out when only one is pending). The run becomes
        ``approved`` once every held task is; rejecting one rejects the run. An approval
        of a held task may carry an edit of that task's input (``edit.update``): it is
        kept on the task's row (``PendingTask.update``), and refused
        (:class:`~agentnb.errors.ConflictingEdit`, audited) when one of its
        ``edit.replaces`` keys is replaced by another held task's accepted edit.

        ``approved`` makes the run ``approved`` (a worker continues it); ``rejected`` ends
        it. ``by`` is the name given, kept for the audit (``approver=`` is its deprecated
        spelling: it warns); ``identity`` is who the process vouches for (default: this
        store's ``identity`` provider), the one the run's approver policy is checked
        against. ``checks`` are the callable policies of the workflow's interrupts, by key,
        for a process that loaded them.

        Every backend applies the same rules (``agentnb.store.decisions.verdict``) to
        the facts it reads inside the decision's transaction.

        Raises :class:`~agentnb.errors.InvalidDecision` (nothing stored),
        :class:`~agentnb.errors.RunNotFound`, :class:`~agentnb.errors.ApprovalNotPending`,
        :class:`~agentnb.errors.NotAuthorized` (or :class:`~agentnb.errors.PolicyUnavailable`),
        :class:`~agentnb.errors.StaleApproval` or :class:`~agentnb.errors.ConflictingEdit`
        (all audited as refused).
        """

    # -- reading -------------------------------------------------------------------------

    @abstractmethod
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """Every checkpoint of the run, oldest first."""

    @abstractmethod
    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        """The run's events with ``seq > after``, in order."""

    def interruptions(self, run_id: str, tasks: Collection[str] = ()) -> dict[str, Event]:
        """The run's latest ``interrupted`` event (keyed ``""``), or with ``tasks``, the
        latest of each of those held tasks (keyed by the task its payload names): what
        the current pause asked. A backend may read the run's events newest first and
        stop once it has them (``latest_interruptions`` in this module); this reads them all."""
        return latest_interruptions(reversed(self.events(run_id)), tasks)

    @abstractmethod
    def decisions(self, run_id: str | None = None) -> list[Decision]:
        """The decision audit (accepted and refused), oldest first."""

    # -- state machines --------------------------------------------------------------------

    @property
    @abstractmethod
    def machines(self) -> MachineStore:
        """The store of state-machine instances kept beside the runs.

        It implements :class:`~agentnb.fsm.instance.MachineStore`; pass the checkpointer
        itself as ``machine.start(store=checkpointer)``.
        """

    @abstractmethod
    def effects(self, run_id: str) -> list[Effect]:
        """The run's recorded side effects, oldest first."""

    def run_status(self, run_id: str) -> Status:
        """Shortcut for ``get_run(run_id).status``."""
        return self.get_run(run_id).status

    # -- history ---------------------------------------------------------------------------

    def list_checkpoints(self, run_id: str) -> list[CheckpointInfo]:
        """Every checkpoint's step, node and time, oldest first, without decoding a state.

        :meth:`~agentnb.Checkpointer.checkpoint` loads any one of them. Backends answer from
        an index; this default (for a backend without one) decodes them all.
        """
        from agentnb.store.history import CheckpointInfo

        return [CheckpointInfo(c.run_id, c.step, c.node, c.at) for c in self.checkpoints(run_id)]

    # -- retention (rules: agentnb.store.retention) ----------------------------------------

    @abstractmethod
    def delete_run(
        self, run_id: str, *, include_audit: bool = False, awaiting: bool = False
    ) -> Pruned:
        """Delete one run: its row, checkpoints, events, policy and effect ledger.

        The decision audit stays unless ``include_audit``. A run that is pending, approved
        or held by a live lease is refused with :class:`~agentnb.errors.RunActive`
        (nothing deleted); with ``awaiting``, a pending or approved run goes too (what
        ``start(..., replace=True)`` does), a leased one is still refused. An unknown id
        raises :class:`~agentnb.errors.RunNotFound`.
        """

    @abstractmethod
    def prune(
        self,
        *,
        before: float | datetime.datetime,
        status: Status | str | None = None,
        include_audit: bool = False,
    ) -> Pruned:
        """Delete the runs that ended before ``before`` (epoch seconds or a datetime).

        Takes ``completed``, ``rejected`` and ``failed`` runs, or only ``status`` (one of
        those or ``cancelled``); running, pending and approved runs are never taken
        (another status raises :class:`~agentnb.errors.InvalidRetention`). Each run goes
        in a transaction of its own, as :meth:`delete_run` does, and the space is returned.
        With ``include_audit``, the audit older than ``before`` that earlier prunes kept
        for runs since deleted goes too.

        Example:
            >>> import time
            >>> from agentnb import MemoryCheckpointer
            >>> MemoryCheckpointer().prune(before=time.time() - 30 * 86400).runs
            ()
        """


def latest_interruptions(newest_first: Iterable[Event], tasks: Collection[str]) -> dict[str, Event]:
    """:meth:`Checkpointer.interruptions` from a run's events, newest first: read only
    until every one asked for is found.

    Example:
        >>> from agentnb.store.records import Event, EventType
        >>> asked = [Event("r", s, 1, EventType.INTERRUPTED, "n", {"task": t}, 0.0)
        ...          for s, t in ((3, "b"), (2, "a"), (1, "a"))]
        >>> {k: e.seq for k, e in latest_interruptions(asked, ("a", "b")).items()}
        {'b': 3, 'a': 2}
    """
    wanted = len(set(tasks)) or 1
    found: dict[str, Event] = {}
    for event in newest_first:
        if event.type != EventType.INTERRUPTED:
            continue
        key = str(event.payload.get("task", "")) if tasks else ""
        if key not in found and (not tasks or key in tasks):
            found[key] = event
            if len(found) == wanted:
                break
    return found
