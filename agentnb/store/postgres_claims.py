"""The PostgreSQL checkpointer's claims and wake-ups: ``FOR UPDATE SKIP LOCKED`` and
``LISTEN``/``NOTIFY``.

The rule is :mod:`agentnb.store.claims`'. A claim is one statement: the inner ``SELECT``
locks the rows it picks and skips the rows another worker's claim has locked, so
concurrent workers take disjoint runs without waiting on each other; the claiming
transaction takes only the shared database key (:mod:`agentnb.store.postgres`), never a
run's, so it does not queue behind steps.

A write that makes work claimable — a run submitted, an approval or answer recorded, a run
put back — sends ``NOTIFY agentnb_work`` once committed. An idle worker waits for it on the
store's listening connection (:mod:`agentnb.store.postgres_listener`): it wakes at once
instead of polling, and a notification that arrives while nobody waits is kept for the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.store.dialect import NOW
from agentnb.store.sql_claims import candidate_params, candidates

__all__ = ["CHANNEL", "update"]

CHANNEL = "agentnb_work"


def update(
    where: str, params: Sequence[Any], limit: int, owner: str, lease_seconds: float
) -> tuple[str, tuple[Any, ...]]:
    """PostgreSQL's claim (a :data:`~agentnb.store.sql_claims.Statement`): each inner
    ``SELECT`` locks the rows it picks and skips those another claim has locked (the few
    it locked beyond ``limit`` are free again when the claim commits)."""
    return (
        f"WITH c AS ({candidates(where, lock=' FOR UPDATE SKIP LOCKED')}) "
        f"UPDATE runs r SET lease_owner = ?, lease_expires = {NOW} + ?, fence = r.fence + 1 "
        "FROM c WHERE r.run_id = c.run_id RETURNING r.run_id",
        (*candidate_params(params, limit), owner, lease_seconds),
    )
