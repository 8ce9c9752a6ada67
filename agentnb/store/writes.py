"""What a write to a checkpointer carries.

:class:`CheckpointWrite` and :class:`StepCommit` are one step's write
(:meth:`~agentnb.store.base.Checkpointer.commit`); :class:`DecisionEdit` is what an
approval carries besides its yes; :func:`pending_digest` is what binds a decision to the
state an approver saw (the rules that check it are :mod:`agentnb.store.decisions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentnb._json import dumps
from agentnb.store.records import Event, Status

__all__ = [
    "CheckpointWrite",
    "DecisionEdit",
    "StepCommit",
    "pending_digest",
]


@dataclass(slots=True)  # not frozen: built on every step (see agentnb.store.records)
class CheckpointWrite:
    """A checkpoint to save: the state (already JSON) after ``step`` nodes, and the next node;
    or, with ``delta_json``, only what changed since the step before."""

    step: int
    node: str
    state_json: str
    tasks_json: str | None = None
    """The next superstep's frontier (JSON) when it is more than ``node``."""
    delta_json: str | None = None
    """When set, the row stores this delta (:func:`agentnb.store.deltas.diff`, JSON) from
    the run's checkpoint at ``step - 1`` instead of ``state_json`` (which may then be
    empty): the writer chose it with :class:`agentnb.store.chains.Chain`. A run's first
    checkpoint ignores it (always a snapshot). Backends store rows through
    :func:`agentnb.store.chains.row` and load them with :func:`~agentnb.store.chains.rebuild`."""
    delta_kind: str = "delta"
    """What ``delta_json`` is a delta from: ``"delta"``, the step before; ``"skip"``, the
    run's previous anchor (:attr:`agentnb.store.chains.Chain.last` says which)."""


@dataclass(slots=True)  # not frozen: built on every step (see agentnb.store.records)
class StepCommit:
    """Everything one step changes, written in one transaction by :meth:`Checkpointer.commit`."""

    status: Status
    node: str
    step: int
    events: Sequence[Event]
    checkpoint: CheckpointWrite | None = None
    error: dict[str, Any] | None = None
    pending_digest: str | None = None
    release: bool = False
    """Give up the lease with this write (the worker stops driving the run)."""
    settles: int | None = None
    """The superstep whose pending writes this commit merges: they are deleted with it."""
    holds: Sequence[tuple[str, str, str]] = ()
    """``(task id, node, digest)`` of each task of superstep ``step`` an interrupt holds:
    saved as pending approvals (a task already held keeps its row and its decision). The
    events of that superstep's pending writes are committed with it, so the writes keep
    only their deltas."""


@dataclass(frozen=True, slots=True)
class DecisionEdit:
    """What an approval carries besides its yes, saved in the decision's transaction.

    Either an edited state (approve with edits: ``state_json`` becomes the pending step's
    checkpoint; ``update`` and ``approved_digest`` go to the audit), or the answer to a
    node's question (``answer_key`` is the ledger key ``ctx.interrupt`` reads back).
    """

    state_json: str | None = None
    tasks_json: str | None = None
    update: dict[str, Any] | None = None
    approved_digest: str | None = None
    answer_key: str | None = None
    answer_json: str | None = None
    replaces: tuple[str, ...] = ()
    """An edit of one held task: the keys of ``update`` that have no reducer (another
    task's edit replacing one of them is refused, :class:`~agentnb.errors.ConflictingEdit`)."""

    def audit(self) -> dict[str, Any]:
        """What the audit keeps of the edit."""
        from agentnb._json import loads

        kept: dict[str, Any] = {}
        if self.update is not None:
            kept["update"] = self.update
            kept["approved_digest"] = self.approved_digest
        if self.answer_json is not None:
            kept["answer"] = loads(self.answer_json)
        return kept


def pending_digest(run_id: str, node: str, step: int, state_json: str) -> str:
    """The digest of what an approver is shown: run, paused node, step and state.

    An approval that carries this digest is refused if the pending state has changed.
    """
    import hashlib  # (OpenSSL's: a few ms to load) when a run first pauses

    text = dumps([run_id, node, step]) + state_json
    return hashlib.sha256(text.encode()).hexdigest()
