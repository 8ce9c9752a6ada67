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
  grows with every write. So on its first write and every ``WAL_CHECK_EVERY`` writes after,
  a connection whose WAL has passed ``WAL_LIMIT`` bytes runs ``wal_checkpoint(TRUNCATE)``,
  and ``journal_size_limit`` trims the file when the WAL restarts. The checkpoint waits for
  the readers in a transaction and another connection's checkpoint to finish:
  ``WAL_WAIT_MS`` for each ``WAL_LIMIT`` the WAL has passed, ``WAL_WAIT_MAX_MS`` at most,
  so the further over, the longer it waits.
* in the browser (Pyodide, ``sys.platform == "emscripten"``) the file must be on a file
  system that reports an open file's size (:func:`keeps_sizes`): the kernel's memory file
  system (``/tmp``, ``/home/pyodide``) does, and there WAL works as it does on a disk.
  JupyterLite's browser drive (``/drive``, where a notebook's directory is) does not, and
  no journal mode mends that, so a database there is refused on open, saying where to put it.
* ``BEGIN IMMEDIATE`` for every write transaction — the write lock is taken up front, so
  two processes can never both read a row and then both decide to change it. A running
  step is one statement (its fenced ``INSERT``), its own transaction: SQLite takes the
  write lock when the statement starts, before it reads the run's fence, and commits as
  it ends — the same as that statement between ``BEGIN IMMEDIATE`` and ``COMMIT``.

One machine's store: a SQLite file is shared by the processes of the machine it is on
(never put it on a network file system), so its clock is that machine's clock. Every
lease — who drives a run, who fires a machine's timers — is decided in the statement on
SQLite's own reading of it (:data:`~agentnb.store.dialect.NOW`), never on a time a process
passes in: a process whose ``time.time()`` is wrong (patched, or in a container with a
fake clock) cannot take over a run another process still holds, nor write a lease that
has already ended. For processes on several machines, whose clocks drift, use
:class:`~agentnb.store.postgres.PostgresCheckpointer`: there every lease is decided on the
server's clock.

The schema is versioned in a ``schema_version`` table and stamped in the header's
``user_version``; numbered migrations in ``migrations/sqlite_NNNN_*.sql`` are applied on
open, and a newer database is refused (:mod:`agentnb.store.migrate`). Opening a current
file is four statements: the stamp read, and the connection's three settings.

What the file system or SQLite refuses — a file this process may not write, a damaged page,
a full disk, an I/O error, a lock held past the timeout — is a typed
:class:`~agentnb.errors.StoreFileError` (:class:`~agentnb.errors.StoreReadOnly`,
:class:`~agentnb.errors.StoreCorrupt`, :class:`~agentnb.errors.StoreFull`) naming the file
and what to do, never a raw ``sqlite3`` error. It is translated in the few doors every
statement passes through: the open, a write's transaction (:class:`_Transaction`), a read
under the lock (:class:`_Reading`) and the one-statement step. A failed write is rolled back.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from agentnb.errors import (
    StoreCorrupt,
    StoreError,
    StoreFileError,
    StoreFull,
    StoreReadOnly,
)
from agentnb.identity import IdentityProvider, check_provider
from agentnb.store import sql_claims, sql_steps
from agentnb.store.dialect import Dialect
from agentnb.store.migrate import LATEST, migrate, stamped
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
WAL_WAIT_MS = 50
"""How long a truncating checkpoint waits for each ``WAL_LIMIT`` the WAL has passed. A
checkpoint of an 8 MiB WAL takes 10-25 ms here (the copy and its fsync), and waiting out
another connection's takes as long: at 10 ms, 12 workers on one file (``bench/soak.py
--workers 12``) took the WAL to 13-16 MiB; at 50 ms, to 9.0-9.8 MiB."""
WAL_WAIT_MAX_MS = 500
"""The longest a truncating checkpoint waits, holding the write lock. A wait that does not
grow lost to load (issue #21): with four busy processes on two cores, readers preempted
inside their transactions outlasted a fixed 10 ms try after try, and the WAL grew to
4.7-7.5 MB against a 256 KiB limit checked every 8 writes (the test's scale); waiting
longer the further over it is, the WAL stayed under 2.1 MB. A reader that never ends (a
shell left inside a transaction) costs a write this much once every ``WAL_CHECK_EVERY``
writes from ten limits over (8 ms a write on average): 3,000 writes that took such a WAL
to 86 MiB cost 4.6 ms each; retrying every write once over, as before, cost 10.9 ms."""

UNSAVED = "Nothing of this write was saved."
UNKNOWN = (
    "The write may or may not have been saved: read it back (or retry it, if it is "
    "idempotent) once the disk is healthy."
)


def failure(path: str, error: sqlite3.Error, doing: str, note: str = "") -> StoreError | None:
    """The typed error for ``error``, met while ``doing`` (``"open"``, ``"read"``,
    ``"write to"``) the database at ``path``, its ``note`` (what became of the write) at
    the end; None for an error of agentnb's own making (a constraint, a misspelt
    statement), which stays what it is.

    Example:
        >>> e = sqlite3.OperationalError("database or disk is full")
        >>> e.sqlite_errorcode = sqlite3.SQLITE_FULL
        >>> full = failure("runs.sqlite3", e, "write to", UNSAVED)
        >>> type(full).__name__, full.reason
        ('StoreFull', 'database or disk is full')
    """
    code = getattr(error, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    reason = str(error)
    if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM):
        kind: type[StoreFileError] = StoreReadOnly
        fix = (
            f"This process (uid {os.geteuid()}) may not write it or the directory holding "
            "it (SQLite keeps its -wal and -shm files beside it): give it write permission "
            "on both, or work on a copy."
        )
    elif primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or (
        primary is None and type(error) is sqlite3.DatabaseError
    ):
        kind = StoreCorrupt
        fix = (
            "The file is damaged or is not a SQLite database: check the path, restore the "
            "file from a backup (`sqlite3 FILE .recover` may salvage its rows into a new "
            "database); agentnb will not change it."
        )
    elif primary == sqlite3.SQLITE_FULL or (primary == sqlite3.SQLITE_IOERR and _no_space(path)):
        # SQLite says "disk I/O error" when a full disk stops it making its -shm file.
        if primary != sqlite3.SQLITE_FULL:
            reason = f"{reason} (the disk holding it has no space left)"
        kind = StoreFull
        fix = "Free space on the disk holding it (or delete old runs: agentnb prune), then retry."
    elif primary == sqlite3.SQLITE_IOERR:
        kind, fix = (
            StoreFileError,
            "The operating system could not read or write the file: check the disk.",
        )
    elif primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        kind = StoreFileError
        fix = (
            "Another process held the database for longer than the store's timeout: retry, "
            "or open the store with a longer timeout."
        )
    elif primary == sqlite3.SQLITE_CANTOPEN:
        why = _unopenable(path)
        reason = f"{reason} ({why})" if why else reason
        kind = StoreFileError
        fix = "Name a database file in an existing directory this process may write."
    elif primary == sqlite3.SQLITE_PROTOCOL:
        kind = StoreFileError
        fix = "File locking failed: keep SQLite files on a local disk, not a network share."
    elif primary == sqlite3.SQLITE_ERROR and reason.startswith(("no such table", "no such column")):
        kind = StoreCorrupt
        fix = (
            "Its tables do not match its schema version (were they changed by hand?): "
            "restore the file from a backup."
        )
    else:
        return None
    return kind(path, doing, reason, f"{fix} {note}".rstrip())


def keeps_sizes(directory: str) -> bool:
    """Whether a file being written in ``directory`` reports its new size while it is
    open: what SQLite reads (``fstat``) to know how many pages its file holds.

    True on every local file system and on Pyodide's memory file system; False on
    JupyterLite's browser drive (``/drive``), where every open file is a private copy of the
    contents saved back only when it is closed, and ``fstat`` gives the saved size. There
    SQLite reads its own writes back as "database disk image is malformed" in every journal
    mode (WAL, DELETE, TRUNCATE, PERSIST, MEMORY and OFF, measured in Chromium with
    JupyterLite 0.8.6 and Pyodide 314.0.6); ``locking_mode=EXCLUSIVE`` lets one connection
    work, but a second one on the file (another store, :func:`agentnb.teach.check`) is
    locked out, and a copy per descriptor could not see the first one's writes anyway.
    Probed with one byte written and removed; a directory that cannot be probed says True
    (opening the database then gives SQLite's own error).

    Example:
        >>> import tempfile
        >>> keeps_sizes(tempfile.gettempdir())
        True
    """
    probe = os.path.join(directory, f".agentnb-probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    except OSError:
        return True
    try:
        os.write(fd, b"x")
        return os.fstat(fd).st_size == 1
    finally:
        os.close(fd)
        os.unlink(probe)


def refuse_browser_drive(path: str, platform: str) -> None:
    """In the browser (``platform`` is ``sys.platform``: ``"emscripten"`` under Pyodide),
    refuse a database on a file system SQLite cannot use (see :func:`keeps_sizes`), saying
    where to put it instead; elsewhere there is nothing to check."""
    if platform != "emscripten" or path in ("", ":memory:") or path.startswith("file:"):
        return
    directory = os.path.dirname(os.path.abspath(path))
    if keeps_sizes(directory):
        return
    raise StoreFileError(
        path,
        "open",
        f"the file system holding {directory} (JupyterLite's browser drive) saves a file "
        "only when it is closed and does not report its size while it is open, and SQLite "
        "needs that in every journal mode",
        "Keep the database in the kernel's memory file system, e.g. "
        "SqliteCheckpointer('/tmp/runs.sqlite3'): it lasts as long as the kernel.",
    )


def _no_space(path: str) -> bool:
    """Whether the file system holding ``path`` has no block left for this process."""
    try:
        disk = os.statvfs(os.path.dirname(os.path.abspath(path)))
    except (OSError, ValueError):
        return False
    return disk.f_bavail == 0


def _unopenable(path: str) -> str:
    """Why the operating system will not let SQLite open ``path``, in its words ('' if it
    does not say): SQLite itself only says "unable to open database file"."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            return f"there is no directory {parent}"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"this process may not create files in {parent}"
        return ""
    except OSError as exc:  # File name too long, Permission denied, ...
        return exc.strerror or str(exc)
    if stat.S_ISDIR(info.st_mode):
        return "it is a directory"
    if not os.access(path, os.R_OK):
        return "this process may not read it"
    return ""


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
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            try:
                if switched:
                    store._db.execute(f"PRAGMA synchronous={store.synchronous}")
            finally:
                store._lock.release()
            typed = failure(store.path, exc, "write to", UNSAVED)
            if typed is None:
                raise
            raise typed from exc
        except BaseException:
            try:
                if switched:
                    store._db.execute(f"PRAGMA synchronous={store.synchronous}")
            finally:
                store._lock.release()
            raise
        return db

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: object
    ) -> None:
        store = self.store
        db = store._db
        try:
            if kind is not None:
                # SQLite may have rolled back already (a full disk, an I/O error).
                if db.in_transaction:
                    _roll_back(store, db)
                if isinstance(error, sqlite3.Error):
                    typed = failure(store.path, error, "write to", UNSAVED)
                    if typed is not None:
                        raise typed from error
                return
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:  # a full disk, an I/O error, a damaged page
                if db.in_transaction:
                    _roll_back(store, db)
                note = UNKNOWN if exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_IOERR else UNSAVED
                raise failure(store.path, exc, "commit to", note) or StoreError(
                    f"cannot commit to {store.path}: {exc}"
                ) from exc
            store._wrote()
        finally:
            try:
                if self.switch:
                    db.execute(f"PRAGMA synchronous={store.synchronous}")
            finally:
                store._lock.release()


def _roll_back(store: SqliteCheckpointer, db: sqlite3.Connection) -> None:
    try:
        db.execute("ROLLBACK")
    except sqlite3.Error as exc:
        typed = failure(store.path, exc, "roll back a write to", UNSAVED)
        if typed is None:
            raise
        raise typed from exc


class _Reading:
    """The store's connection under its lock, for the statements of one read
    (``with _Reading(store) as db``): a SQLite error on the way out is the typed one
    (:func:`failure`). A class, for the same reason as :class:`_Transaction`."""

    __slots__ = ("store",)

    def __init__(self, store: SqliteCheckpointer) -> None:
        self.store = store

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._lock.acquire()
        if store._closed:
            store._lock.release()
            store._check_open()
        return store._db

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _: object
    ) -> None:
        self.store._lock.release()
        if isinstance(error, sqlite3.Error):
            typed = failure(self.store.path, error, "read")
            if typed is not None:
                raise typed from error


def _file_id(path: str) -> tuple[int, int] | None:
    """The (device, inode) of the file at ``path``; ``None`` when there is none (or the
    path names no file: ``":memory:"``, a URI)."""
    if path in ("", ":memory:") or path.startswith("file:"):
        return None
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return (found.st_dev, found.st_ino)


class SqliteCheckpointer(SqlCheckpointer):
    """Checkpoints in a SQLite file (or ``":memory:"``), for the processes of one machine.

    Leases are decided on that machine's clock, read by SQLite in each statement (see the
    module's docstring); across machines, use a PostgreSQL store.

    Args:
        path: the database file; created (with its directory's permissions) if missing.
            In the browser (JupyterLite), a file in the kernel's memory file system
            (``/tmp/runs.sqlite3``): one on the browser's drive is refused (see the module).
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
        refuse_browser_drive(self.path, sys.platform)
        self._lock = threading.RLock()
        self._machines: SqliteMachineStore | None = None
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except ValueError as exc:  # a NUL byte in the name
            raise StoreFileError(
                self.path, "open", str(exc), "Name the file without a NUL byte."
            ) from None
        except sqlite3.Error as exc:
            raise failure(self.path, exc, "open") or StoreError(
                f"cannot open {self.path}: {exc}"
            ) from exc
        # busy_timeout is connect()'s timeout (sqlite3_busy_timeout): no pragma for it.
        self._timeout_ms = int(timeout * 1000)
        try:
            if not stamped(self._db):
                # Not a current agentnb file (new, older, newer, or from before the stamp).
                # WAL and auto-vacuum are the file's, kept in it once set: only here.
                if self._db.execute("PRAGMA page_count").fetchone()[0] == 0:
                    # A new file, before WAL writes its header: incremental auto-vacuum,
                    # so retention gives space back (an older file is converted by its
                    # first prune). Only then: on an existing file it takes the write lock.
                    self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self._db.execute("PRAGMA journal_mode=WAL")
                migrate(self._db, self.path)
            # The connection's own settings, set once each.
            self._db.execute(f"PRAGMA synchronous={level}")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        except sqlite3.Error as exc:
            self._db.close()
            raise failure(self.path, exc, "open") or StoreError(
                f"cannot open {self.path} as an agentnb database: {exc}"
            ) from exc
        except BaseException:
            self._db.close()
            raise
        self._closed = False
        self._writes = 0
        self._file = _file_id(self.path)

    def __repr__(self) -> str:
        return f"<SqliteCheckpointer {self.path!r}>"

    def file_status(self) -> str | None:
        """Whether the file this store opened is still the one at :attr:`path`.

        ``None`` while it is (and for ``":memory:"``); ``"deleted"`` once no file is
        there, ``"replaced"`` once another one is (deleted, then created again). The store
        goes on reading and writing the file it opened, which no new store or other
        process opening :attr:`path` sees any more.
        """
        if self._file is None:
            return None
        now = _file_id(self.path)
        if now is None:
            return "deleted"
        return None if now == self._file else "replaced"

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
        (``agentnb.store.sql_steps.plain``) is one statement, its own transaction.

        An ``INSERT`` takes the write lock before it reads anything (waiting for it as
        ``BEGIN IMMEDIATE`` does), so the fence it checks cannot change before it is
        written, and commits as it ends, at the store's level: the transaction
        ``_write`` would open around it, without its ``BEGIN`` and ``COMMIT``. When
        it writes nothing (less than half the lease left, or the lease lost), the shared
        transaction decides, as for every other change."""
        if sql_steps.plain(change):
            row = sql_steps.entry(run_id, change, time.time())
            due = lease_seconds / 2  # more than this left on the lease, by SQLite's clock
            if row[7] is None:  # no tasks: the statement writes the NULL (see its docstring)
                statement, params = FENCED_UNTASKED_ENTRY, (*row[:7], row[8], fence, due)
            else:
                statement, params = FENCED_ENTRY, (*row, run_id, fence, due)
            with self._lock:
                if self._closed:
                    self._check_open()
                try:
                    written = self._db.execute(statement, params).rowcount
                except sqlite3.Error as exc:  # the statement is its transaction: see COMMIT
                    io = exc.sqlite_errorcode & 0xFF == sqlite3.SQLITE_IOERR
                    typed = failure(self.path, exc, "write to", UNKNOWN if io else UNSAVED)
                    if typed is None:
                        raise
                    raise typed from exc
                if written:
                    self._wrote()
                    return
            # Not tried twice: the transaction goes straight to the run's UPDATE.
            self._commit_entry(run_id, fence, change, row, lease_seconds=lease_seconds, tried=True)
            return
        super().commit(run_id, fence, change, lease_seconds=lease_seconds)

    # -- plumbing ------------------------------------------------------------------------

    def _write(self, *, durable: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (``with store._write() as db``); ``durable``
        commits it at ``FULL`` at least."""
        return _Transaction(self, durable and self._durable != self.synchronous)

    def _wrote(self) -> None:
        """A write transaction committed: on the first and every ``WAL_CHECK_EVERY``-th
        after, bound the WAL."""
        if self._writes % WAL_CHECK_EVERY == 0:
            self._bound_wal()
        self._writes += 1

    def _bound_wal(self) -> None:
        """Checkpoint and truncate the WAL once it has passed ``WAL_LIMIT`` (see above)."""
        try:
            size = os.path.getsize(f"{self.path}-wal")
        except OSError:  # ":memory:", or no WAL yet
            return
        if size <= WAL_LIMIT:
            return
        # Busy (readers outlasted the wait) is a result row, not an error: the commit is
        # safe in the WAL either way, and the next check waits longer if the WAL has grown.
        # The checkpoint holds the write lock while it waits for readers, hence the cap.
        try:
            self._truncate_wal(min(WAL_WAIT_MAX_MS, WAL_WAIT_MS * (size // WAL_LIMIT)))
        except sqlite3.Error:
            # The write that got here is committed and must not look failed (an I/O
            # error): the WAL stays over its limit, and the next check tries again.
            return

    def _truncate_wal(self, wait_ms: int) -> None:
        """``wal_checkpoint(TRUNCATE)``, waiting ``wait_ms`` at most for readers, writers
        and another connection's checkpoint.

        SQLite's busy timeout covers readers and writers but not the checkpoint lock: while
        another connection checkpoints (most often SQLite's own checkpoint after a commit)
        the pragma answers busy at once, with -1 for the WAL's size. So that wait is here.
        With 12 workers on one file, 70-90% of tries ended that way and the WAL reached
        25-30 MiB against its 8 MiB limit, waiting longer or not (20-25 MiB at 50 ms);
        waiting for the lock too, 13-16 MiB at 10 ms, 9.0-9.8 MiB at 50 ms."""
        deadline = time.monotonic() + wait_ms / 1000
        try:
            while True:
                left_ms = max(1, round((deadline - time.monotonic()) * 1000))
                self._db.execute(f"PRAGMA busy_timeout={left_ms}")
                (busy, wal_frames, _), *_ = self._db.execute(
                    "PRAGMA wal_checkpoint(TRUNCATE)"
                ).fetchall()
                if not busy or wal_frames != -1 or time.monotonic() >= deadline:
                    return
                time.sleep(0.001)
        finally:
            self._db.execute(f"PRAGMA busy_timeout={self._timeout_ms}")

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        return _Reading(self)

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several statements see the file as of one moment (WAL)."""
        with _Reading(self) as db:
            db.execute("BEGIN")
            try:
                yield db
            finally:
                if db.in_transaction:
                    db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with _Reading(self) as db:
            return db.execute(sql, params).fetchall()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._db.close()

    @contextmanager
    def _reclaiming(self) -> Iterator[Callable[[bool], tuple[int, bool]]]:
        """Under the store's lock, around a deletion: ``reclaim(changed)`` gives the freed
        pages back when something was deleted; the bytes freed, and whether it could."""
        with _Reading(self) as db:
            before = _size(db)

            def reclaim(changed: bool) -> tuple[int, bool]:
                returned = _return_space(db, self.path) if changed else True
                return max(before - _size(db), 0), returned

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
        typed = failure(path, exc, "give the space freed back from")
        if typed is None:
            raise
        raise typed from exc  # the deletion is committed: the next prune tries again
    return True
