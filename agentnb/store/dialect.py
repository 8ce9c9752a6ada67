"""What one SQL engine does its own way, for :class:`~agentnb.store.sql.SqlCheckpointer`.

The shared statements are written once, in the SQL SQLite and PostgreSQL both speak
(``?`` parameters, ``INSERT ... ON CONFLICT DO NOTHING``, ``RETURNING``, ``CASE``,
``CAST``). A :class:`Dialect` holds the rest: how a statement's text becomes the engine's
(:attr:`Dialect.spell`: PostgreSQL's driver wants ``%s``; SQLite's is the text itself),
which driver errors mean a duplicate key, and how a claim leases runs without two workers
taking the same one (SQLite: the write lock taken up front; PostgreSQL: ``FOR UPDATE SKIP
LOCKED``). Locking and connection handling belong to each backend's transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Dialect", "Statement"]

Statement = Callable[[str, Sequence[Any], float, int, str, float], tuple[str, tuple[Any, ...]]]
"""A claim's ``UPDATE`` in one dialect: ``(where, params, now, limit, owner, expires)`` to
its SQL and parameters; ``where`` (with ``params``) picks the runs of the caller's graphs,
and the statement leases up to ``limit`` of those claimable at ``now``, oldest first,
returning their ids (read through :func:`agentnb.store.sql_claims.candidates`)."""


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
