"""What one SQL engine does its own way, for :class:`~agentnb.store.sql.SqlCheckpointer`.

The shared statements are written once, in the SQL SQLite and PostgreSQL both speak
(``?`` parameters, ``INSERT ... ON CONFLICT DO NOTHING``, ``RETURNING``, ``CASE``,
``CAST``). A :class:`Dialect` holds the rest: how a statement's text becomes the engine's
(:attr:`Dialect.spell`: PostgreSQL's driver wants ``%s``; SQLite's is the text itself),
which driver errors mean a duplicate key, and how a claim leases runs without two workers
taking the same one (SQLite: the write lock taken up front; PostgreSQL: ``FOR UPDATE SKIP
LOCKED``). Locking and connection handling belong to each backend's transaction.

Every lease — a run's, a machine instance's for its timers — is decided on the database's
clock, never on the clock of the process asking: :data:`NOW` is written into each
statement that takes, renews, checks or ends one, so two processes whose clocks disagree
(by drift, by a misset timezone, by an hour) still agree on whether a lease has expired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

__all__ = ["NOW", "Dialect", "Statement", "clock"]

NOW = "((julianday('now') - 2440587.5) * 86400.0)"
"""The database's clock in epoch seconds, as an SQL expression in a shared statement.

Written in SQLite's spelling: there it is SQLite's own reading of the machine's clock
(milliseconds, one value throughout a statement), never a ``time.time()`` passed in from
Python — a SQLite file is one machine's, so its processes share that clock anyway.
PostgreSQL's spelling (:mod:`agentnb.store.postgres_dialect`) rewrites it to the server's
clock, so workers on many machines decide every lease on one clock: the server's."""


def clock(db: sqlite3.Connection) -> float:
    """The database's time (:data:`NOW`), read on ``db``: for a rule decided in Python
    about a lease read in the same transaction (whether deleting a run would cut off the
    worker that holds it)."""
    now: float = db.execute(f"SELECT {NOW}").fetchone()[0]
    return now


Statement = Callable[[str, Sequence[Any], int, str, float], tuple[str, tuple[Any, ...]]]
"""A claim's ``UPDATE`` in one dialect: ``(where, params, limit, owner, lease_seconds)`` to
its SQL and parameters; ``where`` (with ``params``) picks the runs of the caller's graphs,
and the statement leases up to ``limit`` of those claimable now (the database's clock,
:data:`NOW`) for ``lease_seconds``, oldest first, returning their ids (read through
:func:`agentnb.store.sql_claims.candidates`)."""


def _as_written(sql: str) -> str:
    return sql


@dataclass(frozen=True, slots=True)
class Dialect:
    """One engine's spelling of the shared SQL store."""

    name: str
    claim: Statement
    """The claim's ``UPDATE`` (see :data:`Statement`)."""
    duplicate: Callable[[], tuple[type[Exception], ...]]
    """The driver's errors for inserting a key that exists (imported when first asked)."""
    spell: Callable[[str], str] = _as_written
    """A shared statement's text as this engine's driver takes it."""
    open_listing: bool = False
    """Whether a history listing seeks the run's first entry and reads on with no range end,
    stopping at the next run's (SQLite: in a WITHOUT ROWID table a range's end is compared
    with whole rows, a big body read for one comparison; see
    ``sql_checkpoints._LISTING_ON``), rather than reading the run's range
    (PostgreSQL, whose driver fetches a result whole)."""
