"""PostgreSQL's spelling of the shared SQL (:mod:`agentnb.store.dialect`).

The shared statements are written in the SQL both engines speak; what PostgreSQL's driver
takes differently is the parameter marker (``%s``, so a literal ``%`` is doubled), the
absence of SQLite's ``INDEXED BY`` hints, and the database's clock (:data:`CLOCK`).
:func:`spell` applies each rewrite in :data:`REWRITES` (a test pins every one of them)
and caches the result: the statements are few, and each is spelled once per process.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from agentnb.store.dialect import NOW

__all__ = ["CLOCK", "REWRITES", "spell"]

CLOCK = "CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS double precision)"
"""The server's clock in epoch seconds, where the shared SQL says
:data:`~agentnb.store.dialect.NOW`: every lease is decided on it, whatever the clocks of
the workers' machines.

``statement_timestamp()``: the server's time when the statement began — after any lock
an earlier statement of its transaction waited for, unlike ``now()`` (the transaction's
start) — and one value throughout the statement. It is ``STABLE``, so a claim still
compares it with ``lease_expires`` through the ``runs_by_lease`` index, which the
``VOLATILE`` ``clock_timestamp()`` would prevent."""

REWRITES: tuple[tuple[str, Callable[[str], str]], ...] = (
    # Order matters: ``%`` is escaped before ``?`` becomes psycopg's ``%s``.
    ("a literal % is escaped", lambda s: s.replace("%", "%%")),
    ("? becomes %s", lambda s: s.replace("?", "%s")),
    ("INDEXED BY hints are SQLite's", lambda s: re.sub(r"\s+INDEXED BY \w+", "", s)),
    ("the clock is the server's", lambda s: s.replace(NOW, CLOCK)),
)

_CACHE: dict[str, str] = {}


def spell(sql: str) -> str:
    """The shared SQL ``sql`` as PostgreSQL's driver takes it."""
    found = _CACHE.get(sql)
    if found is None:
        found = sql
        for _, rewrite in REWRITES:
            found = rewrite(found)
        _CACHE[sql] = found
    return found
