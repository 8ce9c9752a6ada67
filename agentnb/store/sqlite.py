"""``SqliteCheckpointer``: the default store, one SQLite file shared by any number of processes.

The contract's SQL is :class:`~agentnb.store.sql.SqlCheckpointer`'s; this module is the
connection, its transaction and its settings.

Settings, and why:

* ``journal_mode=WAL`` — readers (a widget, the CLI) never block the worker writing a step.
* ``synchronous=NORMAL`` for steps (default; pass ``synchronous="FULL"`` to change it) — in
  WAL mode a committed step survives the process or kernel crashing; a power cut or OS crash
  may lose the last few commits but never corrupts the file. ``FULL`` fsyncs every commit.
* decisions, refused attempts and effect-ledger writes are always committed at ``FULL`` (or
  the store's level if stronger): the connection switches to it for that one transaction,
  so an approval that was answered "accepted" — and the refund it released — survives an
  OS crash or a power cut. Their fsync also makes every earlier step in the WAL durable.
* ``busy_timeout`` (``timeout=30`` s) — a writer waits for another process's transaction
  instead of failing with "database is locked".
* a bounded WAL — SQLite checkpoints the WAL into the database as it goes, but while
  readers (a panel, the CLI) keep a checkpoint from finishing, the WAL never restarts and
  grows with every write. So every ``WAL_CHECK_EVERY`` writes, a connection whose WAL has
  passed ``WAL_LIMIT`` bytes runs ``wal_checkpoint(TRUNCATE)`` (waiting ``WAL_WAIT_MS`` at
  most for readers, then again after its next write), and ``journal_size_limit`` trims the
  file when the WAL restarts.
* ``BEGIN IMMEDIATE`` for every write transaction — the write lock is taken up front, so
  two processes can never both read a row and then both decide to change it. A running
  step is one statement (its fenced ``INSERT``), its own transaction: SQLite takes the
  write lock when the statement starts, before it reads the run's fence, and commits as
  it ends — the same as that statement between ``BEGIN IMMEDIATE`` and ``COMMIT``.

The schema is versioned in a ``schema_version`` table; numbered migrations in
``migrations/sqlite_NNNN_*.sql`` are applied on open, and a newer database is refused.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from agentnb.errors import StoreError
from agentnb.identity import IdentityProvider, check_provider
from agentnb.store import sql_claims, sql_steps
from agentnb.store.dialect import Dialect
from agentnb.store.migrate import LATEST, migrate
from agentnb.store.sql import SqlCheckpointer
from agentnb.store.sql_steps import FENCED_ENTRY, FENCED_UNTASKED_ENTRY
from agentnb.store.writes import StepCommit

if TYPE_CHECKING:
    from agentnb.store.machines import SqliteMachineStore

__all__ = ["LATEST", "SQLITE", "SqliteCheckpointer"]

SQLITE = Dialect(
    "sqlite",
    claim=sql_claims.update,  # the write lock taken up front already excludes other claims
    duplicate=lambda: (sqlite3.IntegrityError,),
    open_listing=True,
)
"""SQLite's spelling: the shared SQL as written."""
SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
DURABLE = "FULL"
"""The least ``synchronous`` level decisions, refusals and effects are committed at."""
CACHE_KIB = 16 * 1024
"""The connection's page cache, allocated as pages are read (SQLite's default: 2 MiB).
Loading a checkpoint of a long run reads its state's pages, several MiB at 10,000
appended messages: in a 2 MiB cache each load evicts the last one and reads every page
from the OS again (issue #13: median load 3.2 ms there, 1.1 ms with this cache)."""
WAL_LIMIT = 8 * 2**20
WAL_CHECK_EVERY = 64
WAL_WAIT_MS = 10


class _Transaction:
    """The transaction of :meth:`SqliteCheckpointer._write`, under the store's lock.

    A class rather than a generator context manager: every step enters one, and this
    costs a third as much. ``switch``: ``synchronous`` is raised to the durable level for
    this commit — it belongs to the connection and cannot change inside a transaction, so
    it is switched before ``BEGIN`` and back after the commit (or rollback).
    """

    __slots__ = ("store", "switch")

    def __init__(self, store: SqliteCheckpointer, switch: bool) -> None:
        self.store = store
        self.switch = switch

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._lock.acquire()
        switched = False
        try:
            if self.switch:
                store._check_open()
                store._db.execute(f"PRAGMA synchronous={store._durable}")
                switched = True
            store._check_open()
            db = store._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"cannot write to {store.path}: {exc}") from exc
        except BaseException:
            try:
                if switched:
                    store._db.execute(f"PRAGMA synchronous={store.synchronous}")
            finally:
                store._lock.release()
            raise
        return db

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        store = self.store
        db = store._db
        try:
            if kind is not None:
                db.execute("ROLLBACK")
                return
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:  # pragma: no cover - disk full, I/O error
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise StoreError(f"cannot commit to {store.path}: {exc}") from exc
            store._wrote()
        finally:
            try:
                if self.switch:
                    db.execute(f"PRAGMA synchronous={store.synchronous}")
            finally:
                store._lock.release()


class SqliteCheckpointer(SqlCheckpointer):
    """Checkpoints in a SQLite file (or ``":memory:"``).

    Args:
        path: the database file; created (with its directory's permissions) if missing.
        timeout: seconds a write waits for another process's transaction.
        synchronous: SQLite's ``synchronous`` level for steps, ``"NORMAL"`` (default) or
            ``"FULL"``. Decisions and effects are committed at ``FULL`` at least, whatever it is.
        identity: who this process is (a ``callable() -> Identity``) for runs started and
            decisions made through this store; JupyterHub's user or the OS user by default.

    Example:
        >>> with SqliteCheckpointer(":memory:") as store:
        ...     store.list_runs()
        []
    """

    dialect = SQLITE

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: str = "NORMAL",
        identity: IdentityProvider | None = None,
    ) -> None:
        level = synchronous.upper() if isinstance(synchronous, str) else str(synchronous)
        if level not in SYNCHRONOUS_LEVELS:
            raise StoreError(
                f"synchronous={synchronous!r} is not a SQLite level; use one of "
                f"{', '.join(SYNCHRONOUS_LEVELS)}"
            )
        provider = check_provider(identity, "SqliteCheckpointer")
        if provider is not None:
            self.identity = provider
        self.synchronous = level
        # Decisions and effects: FULL, or the store's own level when that is stronger.
        self._durable = max(level, DURABLE, key=SYNCHRONOUS_LEVELS.index)
        self.path = os.fspath(path)
        self._lock = threading.RLock()
        self._machines: SqliteMachineStore | None = None
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            if self._db.execute("PRAGMA page_count").fetchone()[0] == 0:
                # A new file, before WAL writes its header: incremental auto-vacuum, so
                # retention gives space back (an older file is converted by its first
                # prune). Only then: on an existing file the pragma takes the write lock.
                self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={level}")
            self._timeout_ms = int(timeout * 1000)
            self._db.execute(f"PRAGMA busy_timeout={self._timeout_ms}")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            migrate(self._db, self.path)
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot open {self.path} as an agentnb database: {exc}") from exc
        except BaseException:
            self._db.close()
            raise
        self._closed = False
        self._writes = 0
        self._wal_over = False

    def __repr__(self) -> str:
        return f"<SqliteCheckpointer {self.path!r}>"

    @property
    def machines(self) -> SqliteMachineStore:
        """State-machine instances in this database (``machine.start(store=this)``)."""
        from agentnb.store.machines import SqliteMachineStore

        if self._machines is None:
            self._machines = SqliteMachineStore(self.path, self._write, self._read)
        return self._machines

    # -- driving -------------------------------------------------------------------------

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        """As :meth:`Checkpointer.commit <agentnb.Checkpointer.commit>`; the common step
        (:func:`~agentnb.store.sql_steps.plain`) is one statement, its own transaction.

        An ``INSERT`` takes the write lock before it reads anything (waiting for it as
        ``BEGIN IMMEDIATE`` does), so the fence it checks cannot change before it is
        written, and commits as it ends, at the store's level: the transaction
        ``_write`` would open around it, without its ``BEGIN`` and ``COMMIT``. When
        it writes nothing (less than half the lease left, or the lease lost), the shared
        transaction decides, as for every other change."""
        if sql_steps.plain(change):
            now = time.time()
            row = sql_steps.entry(run_id, change, now)
            due = now + lease_seconds / 2
            if row[7] is None:  # no tasks: the statement writes the NULL (see its docstring)
                statement, params = FENCED_UNTASKED_ENTRY, (*row[:7], row[8], fence, due)
            else:
                statement, params = FENCED_ENTRY, (*row, run_id, fence, due)
            with self._lock:
                if self._closed:
                    self._check_open()
                try:
                    written = self._db.execute(statement, params).rowcount
                except sqlite3.OperationalError as exc:
                    raise StoreError(f"cannot write to {self.path}: {exc}") from exc
                if written:
                    self._wrote()
                    return
        super().commit(run_id, fence, change, lease_seconds=lease_seconds)

    # -- plumbing ------------------------------------------------------------------------

    def _write(self, *, durable: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (``with store._write() as db``); ``durable``
        commits it at ``FULL`` at least."""
        return _Transaction(self, durable and self._durable != self.synchronous)

    def _wrote(self) -> None:
        """A write transaction committed: every ``WAL_CHECK_EVERY``, bound the WAL."""
        self._writes += 1
        if self._wal_over or self._writes % WAL_CHECK_EVERY == 0:
            self._bound_wal()

    def _bound_wal(self) -> None:
        """Checkpoint and truncate the WAL once it has passed ``WAL_LIMIT`` (see above)."""
        try:
            size = os.path.getsize(f"{self.path}-wal")
        except OSError:  # ":memory:", or no WAL yet
            return
        self._wal_over = size > WAL_LIMIT
        if self._wal_over:
            # Busy (another connection is checkpointing, or readers outlasted busy_timeout)
            # is a result row, not an error: the commit is safe in the WAL either way, and
            # this connection tries again after its next write until the WAL is truncated.
            # The checkpoint holds the write lock while it waits for readers: wait briefly.
            self._db.execute(f"PRAGMA busy_timeout={WAL_WAIT_MS}")
            try:
                (busy, _, _), *_ = self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self._db.execute(f"PRAGMA busy_timeout={self._timeout_ms}")
            self._wal_over = bool(busy)

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several statements see the file as of one moment (WAL)."""
        self._db.execute("BEGIN")
        try:
            yield self._db
        finally:
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            self._check_open()
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    @contextmanager
    def _reclaiming(self) -> Iterator[Callable[[bool], tuple[int, bool]]]:
        """Under the store's lock, around a deletion: ``reclaim(changed)`` gives the freed
        pages back when something was deleted; the bytes freed, and whether it could."""
        with self._lock:
            before = _size(self._db)

            def reclaim(changed: bool) -> tuple[int, bool]:
                returned = _return_space(self._db, self.path) if changed else True
                return max(before - _size(self._db), 0), returned

            yield reclaim


def _size(db: sqlite3.Connection) -> int:
    """Bytes of the database (its pages, not counting the WAL)."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    page = db.execute("PRAGMA page_size").fetchone()[0]
    return int(pages) * int(page)


def _return_space(db: sqlite3.Connection, path: str) -> bool:
    """Give the free pages back to the file system; False if another process prevented it.

    An incremental vacuum when the file has ``auto_vacuum=INCREMENTAL``; otherwise (a file
    created before agentnb set it) one full ``VACUUM`` that also turns it on. Then the WAL
    is checkpointed so the file itself shrinks.
    """
    try:
        if db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
            # executescript steps the pragma to its end; execute() frees a single page.
            db.executescript("PRAGMA incremental_vacuum;")
        else:
            db.execute("PRAGMA auto_vacuum=INCREMENTAL")
            db.execute("VACUUM")
        if path != ":memory:" and os.path.exists(path):
            busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            return not busy
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return False
        raise
    return True
