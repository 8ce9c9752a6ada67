"""The SQLite schema's numbered migrations, applied when a checkpointer opens a file.

Each ``migrations/sqlite_NNNN_*.sql`` file is one version; ``schema_version`` records the
ones applied, and the file header's ``user_version`` repeats the latest one
(:func:`stamped`), so opening a file at the latest version costs one read of its first
page and nothing else. Any other ``user_version`` — 0 for a new file or one from before
the stamp, a newer or an older number — takes :func:`migrate`: ``schema_version`` is read,
an older file is upgraded in one ``BEGIN IMMEDIATE`` transaction (so two processes
opening it at once apply each migration once) and stamped in it; a file from a newer
agentnb is refused.

A migration may have a Python step (:data:`STEPS`), run in the same transaction right
after its SQL, for what SQL alone cannot say (a change that depends on which tables an
earlier migration created).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator

from agentnb.errors import SchemaVersionError

__all__ = ["LATEST", "MIGRATIONS", "STEPS", "migrate", "stamped", "version"]

MIGRATIONS = (
    "sqlite_0001_initial.sql",
    "sqlite_0002_effects.sql",
    "sqlite_0003_machines.sql",
    "sqlite_0004_trust.sql",
    "sqlite_0005_supersteps.sql",
    # Numbered 0006 (0005 lands from another branch); the list order is what counts.
    "sqlite_0006_machine_timers.sql",
    "sqlite_0007_long_runs.sql",
    "sqlite_0008_deltas.sql",
    "sqlite_0009_claims.sql",
    "sqlite_0010_task_edits.sql",
    "sqlite_0011_skips.sql",
    "sqlite_0012_entries_order.sql",
    "sqlite_0013_flat_instances.sql",
)
LATEST = len(MIGRATIONS)


def _audit_edits_kept_while_their_decision_exists(db: sqlite3.Connection) -> None:
    """The append-only rule of 0007 for ``decision_edits``, when a migration created it:
    an edit is deleted only after its decision row was (retention with ``include_audit``)."""
    found = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'decision_edits'"
    ).fetchone()
    if found is None:
        return
    db.execute("DROP TRIGGER IF EXISTS decision_edits_append_only_delete")
    db.execute(
        "CREATE TRIGGER decision_edits_kept_while_their_decision_exists BEFORE DELETE ON "
        "decision_edits WHEN EXISTS (SELECT 1 FROM decisions WHERE id = OLD.decision_id) "
        "BEGIN SELECT RAISE(ABORT, 'the decision audit of an existing run is append-only'); "
        "END"
    )


def _checkpoints_as_chains(db: sqlite3.Connection) -> None:
    """0011: every run's checkpoints become a chain of snapshots, skips and deltas, checked
    step by step: full-state ones (before 0008) and 0008's chains without skips alike.
    (0008 added the column alone: converting twice would only repeat the work.)"""
    from agentnb.store.sql_checkpoints import convert

    convert(db)


STEPS: dict[str, Callable[[sqlite3.Connection], None]] = {
    "sqlite_0007_long_runs.sql": _audit_edits_kept_while_their_decision_exists,
    "sqlite_0011_skips.sql": _checkpoints_as_chains,
}
"""Python steps run right after the SQL of the migration they are keyed by."""


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements (triggers contain ``;`` inside BEGIN ... END)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip() and not buffer.strip().startswith("--"):
        yield buffer


def version(db: sqlite3.Connection) -> int:
    """The schema version of the open database (0 for a new file)."""
    try:
        row = db.execute("SELECT max(version) FROM schema_version").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return 0
        raise
    return int(row[0] or 0)


def stamped(db: sqlite3.Connection) -> bool:
    """Whether the header says the open database is at :data:`LATEST` (one pragma, which
    reads the first page only: the schema is parsed when a statement first needs it)."""
    return bool(db.execute("PRAGMA user_version").fetchone()[0] == LATEST)


def migrate(db: sqlite3.Connection, path: str) -> None:
    """Bring the database at ``path`` (open as ``db``) to :data:`LATEST`, and stamp it."""
    if version(db) == LATEST:
        # Migrated before the stamp existed: stamp it, if this process may write the file
        # (a read-only one is read all the same, and checked this way on every open).
        try:
            db.execute(f"PRAGMA user_version={LATEST}")
        except sqlite3.OperationalError as exc:
            if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF != sqlite3.SQLITE_READONLY:
                raise
        return
    from importlib import resources  # with tempfile, shutil, lzma...: only to migrate

    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        found = version(db)  # again, under the write lock: another process may have migrated
        if found > LATEST:
            raise SchemaVersionError(path, found, LATEST)
        folder = resources.files("agentnb.store") / "migrations"
        for number, name in enumerate(MIGRATIONS[found:], start=found + 1):
            for statement in _statements((folder / name).read_text("utf-8")):
                db.execute(statement)
            if name in STEPS:
                STEPS[name](db)
            db.execute("INSERT INTO schema_version VALUES (?, ?)", (number, time.time()))
        db.execute(f"PRAGMA user_version={LATEST}")
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (a full disk)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
