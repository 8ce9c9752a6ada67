"""PostgreSQL's spelling of the shared SQL (:mod:`agentnb.store.dialect`).

The shared statements are written in the SQL both engines speak; what PostgreSQL's driver
takes differently is the parameter marker (``%s``, so a literal ``%`` is doubled) and the
absence of SQLite's ``INDEXED BY`` hints. :func:`spell` applies each rewrite in
:data:`REWRITES` (a test pins every one of them) and caches the result: the statements
are few, and each is spelled once per process.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["REWRITES", "spell"]

REWRITES: tuple[tuple[str, Callable[[str], str]], ...] = (
    # Order matters: ``%`` is escaped before ``?`` becomes psycopg's ``%s``.
    ("a literal % is escaped", lambda s: s.replace("%", "%%")),
    ("? becomes %s", lambda s: s.replace("?", "%s")),
    ("INDEXED BY hints are SQLite's", lambda s: re.sub(r"\s+INDEXED BY \w+", "", s)),
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
