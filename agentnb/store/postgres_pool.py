"""The PostgreSQL checkpointer's connections: one, or a bounded pool its threads share.

With ``connections=1`` (the default) a store has one :class:`Session` under one lock:
calls from several threads take turns, as on SQLite's connection — right for a notebook,
a panel or the CLI. A :class:`~agentnb.Worker` driving N runs at once awaits the store
through worker threads (:meth:`~agentnb.store.base.Checkpointer.offload`); on one
connection its runs' steps queue behind one another, and behind any call that waits on
the server (a run's lock, a slow disk). ``connections=N`` gives the store a pool
(``psycopg_pool``) of at most N connections: each call holds one for its duration — a
nested call reuses it — and hands it back, so up to N calls run at once and never more
than N connections are open. A connection the server terminated is dropped by the pool
and replaced when the call runs again (:func:`~agentnb.store.postgres_locks.reconnecting`).
The ``LISTEN`` of an idle worker stays on a connection of its own.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from agentnb.errors import MissingDependency, StoreError
from agentnb.store.postgres_session import APPLICATION_NAME, Session, configure, new_key

LISTENER_NAME = "agentnb-listener"
"""The ``application_name`` of a store's listening connection, so ``pg_stat_activity``
tells it from the connections that read and write (:data:`APPLICATION_NAME`)."""

__all__ = ["Connections"]


class Connections:
    """Where a PostgreSQL checkpointer's calls get their :class:`Session`."""

    def __init__(
        self,
        dsn: str,
        *,
        size: int,
        reconnect_seconds: float,
        connect_timeout: float,
        settings: Mapping[str, str],
    ) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise StoreError(
                f"connections={size!r} is not a number of connections; pass 1 (one "
                "connection, calls take turns) or more (a pool, e.g. a worker's concurrency)"
            )
        self.size = size
        self.reconnects = 0
        self._reconnect_seconds = reconnect_seconds
        self._connect_timeout = connect_timeout
        self._settings = dict(settings)
        # The first connection says what is wrong with a DSN, a password or the server.
        first = self._session(dsn)
        self.dsn, self.where = dsn, first.where
        self._one: Session | None = first
        self._lock = threading.RLock()
        self._pool: Any = None
        self._local = threading.local()
        if size > 1:
            first.close()
            self._one = None
            self._pool = self._open_pool(dsn, size, connect_timeout)

    def _session(self, dsn: str, *, pool: Any = None, listens: bool = False) -> Session:
        return Session(
            dsn,
            reconnect_seconds=self._reconnect_seconds,
            connect_timeout=self._connect_timeout,
            settings=None if listens else self._settings,
            pool=pool,
            name=LISTENER_NAME if listens else APPLICATION_NAME,
            key=None if pool is None else self._key(),
        )

    def _key(self) -> int:
        """A pooled session's ``commit_marks`` key: its thread's, kept for the store's
        life (a thread makes one call at a time, and its rows stay one per thread)."""
        key: int | None = getattr(self._local, "key", None)
        if key is None:
            key = self._local.key = new_key()
        return key

    def _open_pool(self, dsn: str, size: int, connect_timeout: float) -> Any:
        try:
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise MissingDependency("psycopg_pool", "postgres", "PostgresCheckpointer") from None
        settings = self._settings
        return ConnectionPool(
            dsn,
            min_size=1,
            max_size=size,
            kwargs={
                "autocommit": True,
                "connect_timeout": max(1, round(connect_timeout)),
                "application_name": APPLICATION_NAME,
            },
            configure=lambda conn: configure(conn, settings),
            name="agentnb",
            open=True,
        )

    @property
    def session(self) -> Session:
        """This thread's session (pooled: the one its call holds, see :meth:`using`)."""
        if self._one is not None:
            return self._one
        held: Session | None = getattr(self._local, "session", None)
        if held is None:
            raise StoreError(
                f"no connection to {self.where} is held here; the store is closed or this "
                "call was made outside the store's methods"
            )
        return held

    @property
    def lock(self) -> threading.RLock:
        """What serialises the use of :attr:`session`: the store's lock on one connection;
        pooled, this thread's own (its session is no other thread's)."""
        if self._pool is None:
            return self._lock
        mine: threading.RLock | None = getattr(self._local, "lock", None)
        if mine is None:
            mine = self._local.lock = threading.RLock()
        return mine

    @contextmanager
    def using(self) -> Iterator[None]:
        """Around one call: pooled, a connection held by this thread until it returns."""
        if self._pool is None or getattr(self._local, "session", None) is not None:
            yield
            return
        if self._pool.closed:
            raise StoreError(f"the checkpointer for {self.where} is closed; open a new one")
        session = self._session(self.dsn, pool=self._pool)
        self._local.session = session
        try:
            yield
        finally:
            self._local.session = None
            self.reconnects += session.reconnects
            session.close()

    def listening(self) -> Any:
        """A new connection of its own, for ``LISTEN``."""
        return self._session(self.dsn, listens=True).conn

    def stats(self) -> dict[str, int]:
        """The pool's counters (``pool_max``, ``connections_num``, ...; empty on one)."""
        return {} if self._pool is None else dict(self._pool.get_stats())

    def close(self) -> None:
        with self._lock:
            if self._one is not None:
                self._one.close()
            if self._pool is not None:
                self._pool.close()
