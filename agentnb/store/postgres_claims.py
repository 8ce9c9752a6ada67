"""The PostgreSQL checkpointer's claims and wake-ups: ``FOR UPDATE SKIP LOCKED`` and
``LISTEN``/``NOTIFY``.

The rule is :mod:`agentnb.store.claims`'. A claim is one statement: the inner ``SELECT``
locks the rows it picks and skips the rows another worker's claim has locked, so
concurrent workers take disjoint runs without waiting on each other; the claiming
transaction takes only the shared database key (:mod:`agentnb.store.postgres`), never a
run's, so it does not queue behind steps.

A write that makes work claimable — a run submitted, an approval or answer recorded, a run
put back — sends ``NOTIFY agentnb_work`` once committed. An idle worker waits for it on a
connection of its own that ``LISTEN``\\s (:class:`Listener`): it wakes at once instead of
polling, and a notification that arrives while nobody waits is kept for the next wait.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentnb.store.sql_claims import candidate_params, candidates

if TYPE_CHECKING:
    import psycopg

__all__ = ["CHANNEL", "Listener", "update"]

CHANNEL = "agentnb_work"


def update(
    where: str, params: Sequence[Any], now: float, limit: int, owner: str, expires: float
) -> tuple[str, tuple[Any, ...]]:
    """PostgreSQL's claim (a :data:`~agentnb.store.sql_claims.Statement`): each inner
    ``SELECT`` locks the rows it picks and skips those another claim has locked (the few
    it locked beyond ``limit`` are free again when the claim commits)."""
    return (
        f"WITH c AS ({candidates(where, lock=' FOR UPDATE SKIP LOCKED')}) "
        "UPDATE runs r SET lease_owner = ?, lease_expires = ?, fence = r.fence + 1 "
        "FROM c WHERE r.run_id = c.run_id RETURNING r.run_id",
        (*candidate_params(params, now, limit), owner, expires),
    )


class Listener:
    """A connection of its own that ``LISTEN``\\s on :data:`CHANNEL` (opened on first use)."""

    def __init__(self, connect: Any) -> None:
        self._connect = connect
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._heard = False
        self._closed = threading.Event()

    def wait(self, timeout: float) -> bool:
        """Block until a notification arrives (True), or ``timeout`` seconds pass (False).

        The first call only starts listening and returns at once: work may have been
        announced before anyone listened, so the caller claims again. A notification
        heard by a wait whose caller gave up (a cancelled worker wait) is kept for the next.
        """
        with self._lock:
            if self._closed.is_set():
                return False
            if self._heard:
                self._heard = False
                return True
            if self._conn is None or self._conn.closed or self._conn.broken:
                conn = self._connect()
                conn.execute(f"LISTEN {CHANNEL}")
                self._conn = conn
                if self._closed.is_set():  # closed while this wait was connecting
                    self._drop()
                return True
            heard = False
            try:
                for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                    heard = True
                # Drain what else arrived: one wake-up claims for all of it.
                for _ in self._conn.notifies(timeout=0):
                    pass
            except Exception:  # the server went away: listen again (and claim) next time
                self._drop()
                return True
            return heard

    def heard(self) -> None:
        """Mark a wake-up for the next :meth:`wait` (a wait's caller was cancelled)."""
        self._heard = True

    def close(self) -> None:
        """Stop listening for good (a wait in flight returns; none connects again)."""
        self._closed.set()
        self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
