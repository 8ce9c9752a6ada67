"""Claiming runnable work: the rule every backend's :meth:`~agentnb.Checkpointer.claim` follows.

A :class:`~agentnb.Worker` does not pick runs by reading and then acquiring them (two
workers would read the same rows); it asks the store to *claim* up to ``limit`` runs in
one statement, which takes their leases atomically (SQLite: one ``UPDATE ... RETURNING``
inside ``BEGIN IMMEDIATE``; PostgreSQL: the same ``UPDATE`` over a
``SELECT ... FOR UPDATE SKIP LOCKED``, so concurrent workers skip each other's rows
instead of waiting on them). A run is claimable when it is one of the workflows the worker
has the code for (name *and* shape, so it never takes a run it cannot drive) and:

* it is waiting for a worker and nobody holds it: ``queued`` (``workflow.submit``, or put
  back by a worker that stopped) or ``approved`` (a decision, or an answer through
  ``run.respond``, was recorded — by a panel, the CLI or another kernel);
* or its lease has expired, whatever it was doing (``queued``, ``approved``, ``running``):
  its worker died or lost its connection, and the fence of the claim shuts that worker out
  of every later write.

A ``running`` run that nobody holds is *not* claimable: someone is stepping it by hand
(``run.step()`` in a notebook releases the lease between steps), and a worker must not
take it from them. A worker that stops between steps puts its runs back to ``queued``
with :meth:`~agentnb.Checkpointer.requeue`, so they are claimable again at once.

Claims are oldest first (by the time of the run's last status change), so a busy queue is
served in order. The two kinds of claimable run are read apart, each through its own
partial index in its order (free waiting runs by ``status_at``; held runs by
``lease_expires``), so a claim reads about ``limit`` rows however long the queue is —
one condition joined with ``OR`` would make the planner sort the whole queue, under
SQLite's write lock. On PostgreSQL the claim is one statement::

    WITH c AS (SELECT run_id FROM (
                 (SELECT run_id, status_at FROM runs WHERE <graphs> AND <free, waiting>
                  ORDER BY status_at LIMIT %s FOR UPDATE SKIP LOCKED)
                 UNION ALL
                 (SELECT run_id, status_at FROM runs WHERE <graphs> AND <lease expired>
                  ORDER BY status_at LIMIT %s FOR UPDATE SKIP LOCKED)) u
               ORDER BY status_at, run_id LIMIT %s)
    UPDATE runs r SET lease_owner = %s, lease_expires = <server's now> + %s,
                      fence = r.fence + 1
    FROM c WHERE r.run_id = c.run_id RETURNING r.run_id

"Expired" and "now" are the database's clock, in the statement
(:data:`~agentnb.store.dialect.NOW`: PostgreSQL's server clock; on SQLite, SQLite's
reading of the machine's), never the claiming process's: workers on machines whose clocks
disagree still agree on whose lease has run out.

State-machine instances are claimed the same way when one of their durable timers is due
(:meth:`~agentnb.Checkpointer.claim_timers`): a lease per instance, so one worker fires
them while the others skip it. The fence of a machine write is its ``seq`` (a step based
on a stale read is refused, :class:`~agentnb.errors.InstanceConflict`) and a timer's
firing has a unique event id, so a worker whose lease ran out can never fire a timer twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentnb.store.records import RunRecord, Status

__all__ = ["RESUMABLE", "WAITING", "TimerClaim", "claimable", "graph_filter"]

WAITING = (Status.QUEUED, Status.APPROVED)
"""Statuses a free run is claimed in at once."""
RESUMABLE = (Status.QUEUED, Status.APPROVED, Status.RUNNING)
"""Statuses a run whose lease expired is claimed in (its worker is gone)."""


def claimable(
    run: RunRecord,
    graphs: Mapping[str, str],
    now: float,
    run_ids: Sequence[str] | None = None,
) -> bool:
    """True when ``run`` may be claimed by a worker for ``graphs`` (name -> shape) at ``now``."""
    if graphs.get(run.graph) != run.shape:
        return False
    if run_ids is not None and run.run_id not in run_ids:
        return False
    if run.lease_owner is None:
        return run.status in WAITING
    return run.status in RESUMABLE and (run.lease_expires or 0.0) <= now


def graph_filter(graphs: Mapping[str, str]) -> tuple[str, list[str]]:
    """The SQL condition (``?`` placeholders) and parameters matching ``graphs``' runs."""
    if not graphs:
        return "0", []
    condition = " OR ".join("(graph = ? AND shape = ?)" for _ in graphs)
    params = [v for name, shape in sorted(graphs.items()) for v in (name, shape)]
    return f"({condition})", params


@dataclass(frozen=True, slots=True)
class TimerClaim:
    """A state-machine instance with a due timer, leased to ``owner`` until ``expires``.

    Times are the store's clock (a SQL store's: the database's, see
    :data:`~agentnb.store.dialect.NOW`): the worker fires the timers due at ``now``, the
    moment the claim found them due, not at its own idea of the time."""

    instance_id: str
    machine: str
    fire_at: float
    """When its earliest due timer was due."""
    owner: str
    expires: float
    now: float
    """The moment the claim found the timer due (the ``now`` it was asked for, or the
    store's time)."""
