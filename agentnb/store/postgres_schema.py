"""The PostgreSQL schema's numbered migrations, applied when a checkpointer connects.

Each ``migrations/postgres_NNNN_*.sql`` file is one version; ``schema_version`` records the
ones applied. Connecting to a database at the latest version costs one read; an older one
is upgraded in one transaction that holds an advisory lock (so two processes connecting at
once apply each migration once); a database from a newer agentnb is refused.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import TYPE_CHECKING

from agentnb.errors import SchemaVersionError

if TYPE_CHECKING:
    from agentnb.store.postgres_session import Session

__all__ = ["LATEST", "MIGRATIONS", "MIGRATION_LOCK", "migrate", "version"]

MIGRATIONS = (
    "postgres_0001_initial.sql",
    "postgres_0002_deltas.sql",
    "postgres_0003_claims.sql",
    "postgres_0004_task_edits.sql",
    "postgres_0005_skips.sql",
    "postgres_0006_entries_reads.sql",
    "postgres_0007_commit_marks.sql",
    "postgres_0008_flat_instances.sql",
)
LATEST = len(MIGRATIONS)
MIGRATION_LOCK = (0, 1)
"""The advisory lock (two int4 keys) held while migrating."""


def version(session: Session) -> int:
    """The schema version of the database the session is connected to (0 when new)."""
    (table,) = session.raw("SELECT to_regclass('schema_version')").fetchone()
    if table is None:
        return 0
    (found,) = session.raw("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(found)


def migrate(session: Session) -> None:
    """Bring the database to :data:`LATEST`, or refuse one that is newer."""
    found = version(session)
    if found == LATEST:
        return
    if found > LATEST:
        raise SchemaVersionError(session.where, found, LATEST)
    with session.conn.transaction():
        session.raw("SELECT pg_advisory_xact_lock(%s, %s)", MIGRATION_LOCK)
        session.raw(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version integer PRIMARY KEY, applied_at double precision NOT NULL)"
        )
        found = version(session)  # again, under the lock: another process may have migrated
        if found > LATEST:
            raise SchemaVersionError(session.where, found, LATEST)
        folder = resources.files("agentnb.store") / "migrations"
        for number, name in enumerate(MIGRATIONS[found:], start=found + 1):
            session.conn.execute((folder / name).read_text("utf-8").encode())
            session.raw("INSERT INTO schema_version VALUES (%s, %s)", (number, time.time()))
