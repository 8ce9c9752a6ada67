"""Retention: which runs ``prune`` and ``delete_run`` remove, what they keep, and why.

The rules, the same in every backend:

* **What goes** with a run: its row, every checkpoint, the event log, the approver policy
  stored at its start, and its side-effect ledger (``ctx.once`` results). The ledger exists
  so that a *re-executed* step does not repeat an effect; a deleted run is never executed
  again, and a new run that reuses its id must not be answered from its ledger.
* **What stays**: the decision audit (accepted decisions and refused attempts alike), unless
  ``include_audit=True`` (``--include-audit``), which also takes the audit older than the
  cutoff that earlier prunes kept for runs since deleted. The audit is append-only: a row
  is never changed, and it is deleted only by an explicit ``include_audit`` retention, once
  its run is deleted. SQLite enforces both: a trigger refuses every ``UPDATE``, another
  refuses to delete the audit of a run that still exists — so no code path can thin the
  audit of a live run.
* **Never deleted**: a run that is ``pending`` (a person is asked to decide it), ``approved``
  (a person's yes waits for a worker), or held by a live lease (a worker is driving it).
  :meth:`~agentnb.store.base.Checkpointer.prune` takes finished runs only — ``completed``,
  ``rejected``, ``failed`` (by default all three), or ``cancelled`` when named;
  :meth:`~agentnb.store.base.Checkpointer.delete_run` refuses the three cases above with
  :class:`~agentnb.errors.RunActive`. Both decide inside the write transaction, so a worker
  or an approver in another process cannot slip in between the check and the delete.
  The one exception is asked for by name: ``start(..., run_id=..., replace=True)`` (and
  ``delete_run(..., awaiting=True)``) deletes a pending or approved run it replaces, with
  its audit; a run held by a live lease is refused there too.
* **State-machine instances** are not runs: ``prune`` leaves them (and their event records)
  alone. An instance has no "finished" status a retention rule could rely on — a machine in
  a final state is still what a person inspects.
* **Space** is returned: SQLite files are created with ``auto_vacuum=INCREMENTAL`` and
  ``prune`` ends with an incremental vacuum. A file created before that setting existed
  gets one full ``VACUUM`` at its first prune, which also converts it (``auto_vacuum`` can
  only change through a ``VACUUM``), so opening an old file never pays a hidden rewrite.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from agentnb.errors import InvalidRetention, RunActive
from agentnb.store.base import owner_is_dead
from agentnb.store.records import RunRecord, Status

__all__ = [
    "PRUNABLE",
    "Pruned",
    "check_deletable",
    "cutoff",
    "parse_duration",
    "prunable_statuses",
]

PRUNABLE = (Status.COMPLETED, Status.REJECTED, Status.FAILED, Status.CANCELLED)
"""The statuses ``prune`` may take; without ``status=`` it takes the finished ones."""

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


@dataclass(frozen=True, slots=True)
class Pruned:
    """What a prune (or a ``delete_run``) removed."""

    runs: tuple[str, ...]
    """The ids of the runs deleted, in the order they were."""
    audit_rows: int = 0
    """Decision-audit rows deleted (0 unless ``include_audit``)."""
    freed_bytes: int = 0
    """Bytes the database file gave back (0 for a store in memory)."""
    space_returned: bool = True
    """False when the vacuum could not run (another process held the file); the next
    prune returns the space."""


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``30d``, ``12h``, ``1w2d``, ``90m`` or ``45s``.

    Raises:
        InvalidRetention: for anything else (nothing is deleted).

    Example:
        >>> parse_duration("1d12h")
        129600.0
    """
    cleaned = text.strip().lower() if isinstance(text, str) else ""
    parts = _DURATION.findall(cleaned)
    if not cleaned or "".join(n + u for n, u in parts) != cleaned:
        raise InvalidRetention(
            "--older-than",
            text,
            "give a number and a unit, s, m, h, d or w (e.g. 30d, 12h, 1w2d)",
        )
    return float(sum(float(n) * _UNITS[u] for n, u in parts))


def cutoff(before: float | _dt.datetime) -> float:
    """``before`` as epoch seconds (a naive datetime is taken as UTC)."""
    if isinstance(before, _dt.datetime):
        if before.tzinfo is None:
            before = before.replace(tzinfo=_dt.UTC)
        return before.timestamp()
    if isinstance(before, bool) or not isinstance(before, int | float):
        raise InvalidRetention(
            "before", before, "give a datetime or epoch seconds (time.time() - 30 * 86400)"
        )
    return float(before)


def prunable_statuses(status: Status | str | None) -> tuple[Status, ...]:
    """The statuses a prune takes: the one named, or every finished one."""
    if status is None:
        return tuple(s for s in PRUNABLE if s.finished)
    try:
        found = Status(str(status))
    except ValueError:
        found = None
    if found not in PRUNABLE:
        raise InvalidRetention(
            "status",
            str(status),
            "prune takes runs that ended: "
            + ", ".join(str(s) for s in PRUNABLE)
            + " (running, pending and approved runs are never pruned)",
        )
    assert found is not None
    return (found,)


def check_deletable(run: RunRecord, now: float | None = None, *, awaiting: bool = False) -> None:
    """Refuse (:class:`~agentnb.errors.RunActive`) a run that must not be deleted.

    ``awaiting``: a run that waits for a person (pending) or a worker (approved) may go
    too (``start(..., replace=True)``); a run held by a live lease never does.
    """
    now = time.time() if now is None else now
    if not awaiting and run.status in (Status.PENDING, Status.APPROVED):
        raise RunActive(run.run_id, str(run.status))
    live = run.lease_owner is not None and (run.lease_expires or 0) > now
    if live and not owner_is_dead(run.lease_owner):
        raise RunActive(run.run_id, str(run.status), run.lease_owner)


def selected(
    run: RunRecord, statuses: Sequence[Status], before: float, now: float | None = None
) -> bool:
    """True when ``prune`` takes ``run``: a chosen status, last changed before ``before``,
    and deletable."""
    if run.status not in statuses or run.updated_at >= before:
        return False
    try:
        check_deletable(run, now)
    except RunActive:
        return False
    return True
