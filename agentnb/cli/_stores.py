"""Opening the database a command names with ``--db``: a SQLite file or a PostgreSQL URL."""

from __future__ import annotations

from agentnb.cli._exits import existing_file
from agentnb.store.base import Checkpointer
from agentnb.store.sqlite import SqliteCheckpointer

__all__ = ["DB_HELP", "POSTGRES_SCHEMES", "open_existing", "open_store", "shown"]

DB_HELP = "the SQLite checkpoint file, or a postgresql://USER:PASSWORD@HOST/DB URL"
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def open_store(db: str, *, connections: int = 1) -> Checkpointer:
    """A ``postgresql://`` URL's server (through a pool of ``connections``), or the SQLite
    file at ``db`` (created if missing)."""
    if db.startswith(POSTGRES_SCHEMES):
        from agentnb.store.postgres import PostgresCheckpointer

        return PostgresCheckpointer(db, connections=connections)
    return SqliteCheckpointer(db)


def shown(db: str) -> str:
    """``--db`` as it may be printed: a PostgreSQL URL without its password; a file name's
    bytes that are not UTF-8 escaped (``\\xff``)."""
    if db.startswith(POSTGRES_SCHEMES):
        from agentnb.store.postgres_session import masked

        return masked(db)
    return db.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def open_existing(path: str) -> Checkpointer:
    if path.startswith(POSTGRES_SCHEMES):
        return open_store(path)
    existing_file(
        "--db",
        path,
        f"no database at {path!r} (check --db; runs are saved where the "
        "workflow's SqliteCheckpointer points)",
    )
    return SqliteCheckpointer(path)
