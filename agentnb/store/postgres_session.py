"""The PostgreSQL checkpointer's connection: connect, speak the shared SQL, survive a restart.

The checkpointer's row functions (the ``sql_*`` modules, the machine store) are written
once, in the SQL both engines speak, with ``?`` parameters. A :class:`Session` runs them
on PostgreSQL, spelled for its driver by :func:`~agentnb.store.postgres_dialect.spell`.

A session is one connection (a step is one short transaction; the checkpointer's lock
serialises its use, as SQLite's connection is). When the server goes away — restarted, or
the backend terminated — the next statement reconnects with exponential backoff up to
``reconnect_seconds``. A transaction cut off before its COMMIT was answered is *in doubt*.
It learns its outcome from something only it wrote: every write transaction sets its
connection key's row of ``commit_marks`` to a random mark of its own in the COMMIT's round
trip (:meth:`Session.marking`), and :meth:`Session.committed` reads the row back on a new
connection — the mark is there if and only if the transaction committed, so the caller
knows whether to run it again, never twice. Never the transaction id's status
(``pg_xact_status``): after a crash the server hands out again the ids that were never
made durable, and would answer for another client's transaction.
"""

from __future__ import annotations

import contextlib
import random
import re
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from agentnb.errors import MissingDependency, StoreError, StoreUnavailable
from agentnb.store.postgres_dialect import spell

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "APPLICATION_NAME",
    "Disconnected",
    "Session",
    "configure",
    "load_psycopg",
    "masked",
    "new_key",
]

CONNECT_TIMEOUT = 10
APPLICATION_NAME = "agentnb"
"""What ``pg_stat_activity`` shows for a store's connections that read and write."""
"""Seconds a connection attempt waits for the server before it is a typed error."""


_MARK = (
    "INSERT INTO commit_marks SELECT {key}, {mark}, now() "
    "WHERE pg_current_xact_id_if_assigned() IS NOT NULL "
    "ON CONFLICT (session) DO UPDATE SET mark = excluded.mark, at = excluded.at"
)
"""A write transaction's last statement: its mark in its key's row. Only a transaction
that wrote something (it has a transaction id) writes it: one that wrote nothing is as
well run again, and costs no WAL flush. Integers only, formatted in: it is sent with
the ``COMMIT`` in one simple-protocol round trip, which takes no parameters."""
_READ_MARK = (
    "INSERT INTO commit_marks VALUES (%s, 0, now()) "
    "ON CONFLICT (session) DO UPDATE SET mark = commit_marks.mark RETURNING mark"
)
"""The mark in a key's row, after any transaction still writing it has ended (the upsert
waits for it — a server that has not yet seen its client go — where a read would not)."""


def new_key() -> int:
    """A random connection key for ``commit_marks`` (63 bits: a ``bigint``)."""
    return secrets.randbits(63)


class Disconnected(Exception):
    """The connection was lost inside a transaction that did not commit: run it again."""


def masked(dsn: str) -> str:
    """``dsn`` without its password, for messages and ``repr``."""
    if "://" not in dsn:
        return re.sub(r"password\s*=\s*\S+", "password=***", dsn)
    try:
        parts = urlsplit(dsn)
    except ValueError:  # not a URL it can split (``postgresql://u@[bad/db``): mask by hand
        return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def load_psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise MissingDependency("psycopg", "postgres", "PostgresCheckpointer") from None
    return psycopg


DSN_FIX = "write the DSN as postgresql://USER:PASSWORD@HOST:PORT/DATABASE"


def _why(exc: Exception, *, malformed: bool = False) -> tuple[str, str]:
    """The fact and the fix for a failed connection attempt."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    low = text.lower()
    if malformed or "invalid" in low:
        return text, DSN_FIX
    if "password" in low or "authentication" in low:
        return text, "check the user name and password in the DSN"
    if "does not exist" in low:
        return text, "create the database (createdb NAME) or name an existing one in the DSN"
    return text, "check that the server is running and reachable at the DSN's host and port"


class Session:
    """One connection to PostgreSQL in autocommit mode; transactions are explicit.

    ``settings`` (``set_config`` name to value) are applied to every connection the session
    opens, a reconnection's too. With ``pool`` (a ``psycopg_pool.ConnectionPool`` opened by
    :mod:`agentnb.store.postgres_pool`, which applies them), the connection is taken from
    it and given back on :meth:`close`; a broken one is replaced by the pool.
    """

    def __init__(
        self,
        dsn: str,
        *,
        reconnect_seconds: float,
        connect_timeout: float,
        settings: Mapping[str, str] | None = None,
        pool: Any = None,
        name: str = APPLICATION_NAME,
        key: int | None = None,
    ) -> None:
        self.dsn = dsn
        self.key = new_key() if key is None else key
        """The ``commit_marks`` row this session's write transactions mark: its own (a
        pooled session's is its thread's), so no other transaction writes it meanwhile."""
        self.name = name  # application_name: what pg_stat_activity shows for it
        self.where = masked(dsn)
        self.reconnect_seconds = reconnect_seconds
        self.connect_timeout = connect_timeout
        self.settings = dict(settings or {})
        self._pg = load_psycopg()
        self._pool = pool
        self._conn: psycopg.Connection[Any] | None = None
        self.in_transaction = False
        self.reconnects = 0
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        pg = self._pg
        if self._pool is not None:
            return self._from_pool()
        try:
            conn: psycopg.Connection[Any] = pg.connect(
                self.dsn,
                autocommit=True,
                connect_timeout=max(1, round(self.connect_timeout)),
                application_name=self.name,
            )
        except pg.ProgrammingError as exc:  # a malformed DSN, which libpq may quote
            fact, fix = _why(exc, malformed=True)
            raise StoreUnavailable(self.where, fact.replace(self.dsn, self.where), fix) from None
        except pg.OperationalError as exc:
            fact, fix = _why(exc)
            raise StoreUnavailable(self.where, fact, fix) from None
        configure(conn, self.settings)
        return conn

    def _from_pool(self) -> psycopg.Connection[Any]:
        from psycopg_pool import PoolTimeout

        try:
            conn: psycopg.Connection[Any] = self._pool.getconn(timeout=self.reconnect_seconds)
        except PoolTimeout:
            raise StoreUnavailable(
                self.where,
                f"no pooled connection came free or could be opened in {self.reconnect_seconds} s",
                "check that the server is reachable, or give the store more connections",
            ) from None
        return conn

    def reconnect(self) -> None:
        """A new connection, retried with exponential backoff up to ``reconnect_seconds``.

        A refused login is not retried: waiting does not fix a password.
        """
        self.close()
        deadline = time.monotonic() + self.reconnect_seconds
        pause = 0.05
        while True:
            try:
                self._conn = self._connect()
            except StoreUnavailable as exc:
                if "password" in exc.reason or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)  # backoff between attempts, not a wait for a condition
                pause = min(pause * 2, 1.0)
                continue
            self.reconnects += 1
            return

    @property
    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise StoreError(f"the connection to {self.where} is closed; open a new store")
        return self._conn

    def lost(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the connection is gone (not an error of the statement)."""
        pg = self._pg
        if isinstance(exc, pg.errors.AdminShutdown | pg.errors.CannotConnectNow):
            return True
        if isinstance(exc, pg.OperationalError):
            return self._conn is None or self._conn.closed or self._conn.broken
        return False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one shared-SQL statement; outside a transaction a lost connection is
        reconnected and the statement (a read, or one atomic write) run again — again on
        each new connection that is lost too (a server going down may let one in and then
        close it), for up to ``reconnect_seconds``.

        Raises:
            Disconnected: the connection was lost inside a transaction.
            StoreUnavailable: no connection kept long enough to run it.
        """
        query = spell(sql)
        deadline = time.monotonic() + self.reconnect_seconds
        while True:
            try:
                return self.conn.execute(query, tuple(params))
            except Exception as exc:
                if not self.lost(exc):
                    raise
                if self.in_transaction:
                    raise Disconnected(str(exc)) from exc
                if time.monotonic() > deadline:
                    raise StoreUnavailable(
                        self.where,
                        f"every connection was lost before it could answer for "
                        f"{self.reconnect_seconds} s ({str(exc).strip() or type(exc).__name__})",
                        "check that the server is up and stays up",
                    ) from None
            self.reconnect()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one shared-SQL statement for each of ``rows``, in the caller's transaction
        (retention's deletes). Not retried here: the rows are not one atomic write.

        Raises:
            Disconnected: the connection was lost; the caller runs its transaction again.
        """
        with self._lost_is_disconnected(), self.conn.cursor() as cursor:
            cursor.executemany(spell(sql), [tuple(r) for r in rows])

    def raw(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run PostgreSQL SQL as it is (no rewriting)."""
        with self._lost_is_disconnected():
            return self.conn.execute(sql, tuple(params))

    @contextlib.contextmanager
    def _lost_is_disconnected(self) -> Iterator[None]:
        """Raise a lost connection as :class:`Disconnected` (what a transaction retries on)."""
        try:
            yield
        except Exception as exc:
            if self.lost(exc):
                raise Disconnected(str(exc)) from exc
            raise

    def marking(self) -> tuple[int, str]:
        """A new mark, and the statement that writes it (sent just before ``COMMIT``)."""
        mark = random.getrandbits(63)
        return mark, _MARK.format(key=self.key, mark=mark)

    def committed(self, mark: int) -> bool:
        """After a lost COMMIT: did the transaction that wrote ``mark`` commit?"""
        row = self.ask(_READ_MARK, (self.key,))
        return row is not None and row[0] == mark

    def ask(self, sql: str, params: Sequence[Any] = (), *, reconnect: bool = True) -> Any:
        """The first row of PostgreSQL ``sql``, a question that settles a write in doubt,
        asked on a new connection (``reconnect=False``: on the session's own, a new one
        asked before) — and on another each time that one is lost too — until answered.

        Raises:
            StoreUnavailable: the server did not come back for ``reconnect_seconds``; the
                write may have committed or not.
        """
        deadline = time.monotonic() + self.reconnect_seconds
        stale = reconnect
        while True:
            try:
                if stale or self._conn is None or self._conn.closed or self._conn.broken:
                    self.reconnect()
                return self.conn.execute(sql, tuple(params)).fetchone()
            except StoreUnavailable as exc:
                reason = exc.reason
            except Exception as exc:
                if not self.lost(exc):
                    raise
                reason = str(exc).strip() or type(exc).__name__
            stale = True
            if time.monotonic() > deadline:
                raise StoreUnavailable(
                    self.where,
                    f"the connection was lost in the COMMIT of a write, and the server could "
                    f"not say in {self.reconnect_seconds} s whether it was kept ({reason})",
                    "once the server is up, read back what the write was to do (the run's "
                    "decisions, checkpoints or effects) before doing it again: it may "
                    "have been kept",
                ) from None

    def close(self) -> None:
        """Close the connection (give it back to the pool, which drops a broken one)."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if self._pool is not None:
                self._pool.putconn(conn)
            else:
                conn.close()


def configure(conn: psycopg.Connection[Any], settings: Mapping[str, str]) -> None:
    """Apply ``settings`` to a new connection (session-wide, as ``SET`` would)."""
    for name, value in settings.items():
        conn.execute("SELECT set_config(%s, %s, false)", (name, value))
