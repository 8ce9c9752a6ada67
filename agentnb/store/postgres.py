"""``PostgresCheckpointer``: the same contract on a PostgreSQL server, for many machines.

Install the extra: ``pip install "agentnb[postgres]"`` (psycopg 3). It keeps the same
tables as the SQLite store (``migrations/postgres_NNNN_*.sql``, numbered, a newer schema
refused) and is the same :class:`~agentnb.store.sql.SqlCheckpointer` as the SQLite store,
with PostgreSQL's dialect and transactions, so both backends decide, fence and audit with
one piece of code. What differs, and why:

* **Locks instead of a file lock.** SQLite's ``BEGIN IMMEDIATE`` makes every write wait
  for the one before. Here a write transaction takes a transaction-scoped advisory lock
  on its run (``pg_advisory_xact_lock``), shared with a database-wide key that only
  retention and machine writes take exclusively: steps and decisions of *different* runs
  commit in parallel, while everything read and changed in one run's transaction — the
  pending row, its policy, its fence — stays as it was checked until the commit. A
  decision is still one conditional ``UPDATE`` of the pending row in that transaction.
  The common step is one statement in one round trip, its row lock standing in for the
  run's (:meth:`PostgresCheckpointer._step`).
* **Connections.** One by default; ``connections=N`` pools up to N for calls made from
  several threads at once — a :class:`~agentnb.Worker`'s runs
  (:mod:`agentnb.store.postgres_pool`).
* **Durability.** ``synchronous_commit`` is the server's (``on`` unless configured);
  ``synchronous_commit="off"`` makes steps cheaper (a server crash may lose the last few,
  never corrupt) while decisions, refusals and the effects ledger are always committed
  with ``synchronous_commit = on`` — as SQLite commits them at ``FULL``.
* **The server may go away.** A restart, a crash or a terminated backend cuts the
  connection: the store reconnects with backoff (``reconnect_seconds``) and runs the
  cut-off call again — unless its COMMIT had been kept, which it learns from what only
  that transaction wrote (its mark in ``commit_marks``; a plain step's own entry), never
  from the transaction id, which a crashed server hands out again. So a step, a decision,
  an effect or a claim returns with its rows in the database, or raises a
  :class:`~agentnb.errors.StoreUnavailable` with nothing written (a retry does it once)
  — or, if the server stays away for ``reconnect_seconds`` after a COMMIT was cut off, a
  ``StoreUnavailable`` that says the write may have been kept. A refused login, an
  unknown database or a server down at the start are a ``StoreUnavailable`` after
  ``connect_timeout`` at most.
* **Retention** deletes rows as SQLite's does; the server's autovacuum makes the space
  reusable, so ``freed_bytes`` is 0 (shrinking files is ``VACUUM FULL``, an operator's job).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, cast

from agentnb.errors import StoreError
from agentnb.identity import IdentityProvider, check_provider
from agentnb.store import postgres_claims, sql_steps
from agentnb.store.dialect import NOW, Dialect
from agentnb.store.postgres_claims import CHANNEL
from agentnb.store.postgres_dialect import spell
from agentnb.store.postgres_listener import (
    CHANGES,
    Listener,
    announcement,
    run_topic,
    topic_of,
    unannounced,
)
from agentnb.store.postgres_locks import (
    SHARED,
    WATCHED,
    begin,
    for_new_run,
    for_run,
    keyed,
    reconnecting,
    run_lock,
    waking,
)
from agentnb.store.postgres_pool import Connections
from agentnb.store.postgres_schema import migrate
from agentnb.store.postgres_session import Disconnected, Session, load_psycopg
from agentnb.store.sql import SqlCheckpointer
from agentnb.store.sql_rows import ENTRY
from agentnb.store.writes import StepCommit

if TYPE_CHECKING:
    import sqlite3

    from agentnb.store.machines import SqliteMachineStore
    from agentnb.store.watch import Watch

__all__ = ["POSTGRES", "PostgresCheckpointer"]

POSTGRES = Dialect(
    "postgresql",
    claim=postgres_claims.update,  # FOR UPDATE SKIP LOCKED: claims never wait on each other
    duplicate=lambda: (load_psycopg().errors.UniqueViolation,),
    spell=spell,
)
"""PostgreSQL's spelling: ``%s`` parameters, no index hints, its own claim and errors."""

_STEP = spell(
    f"{ENTRY} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? FROM runs WHERE run_id = ? AND fence = ? "
    f"AND lease_owner IS NOT NULL AND status = 'running' AND lease_expires > {NOW} + ? FOR SHARE "
    f"RETURNING pg_try_advisory_xact_lock({WATCHED}, ?) "
    f"OR (SELECT pg_notify('{CHANGES}', ?) IS NULL)"
)
"""PostgreSQL's plain step (:meth:`PostgresCheckpointer._step`): the shared
:data:`~agentnb.store.sql_steps.FENCED_ENTRY`, the run's row locked as it is checked; the
entry written is announced if a panel watches its run (the probe and ``NOTIFY`` of
:mod:`agentnb.store.postgres_listener`, in the same statement)."""
_SETTLED = "SELECT 1 FROM runs WHERE run_id = %s FOR NO KEY UPDATE"
"""After a plain step was cut off: wait until a step still in flight on the server (its
client gone unnoticed) has ended — it holds the run's row ``FOR SHARE``."""
_WRITTEN = "SELECT 1 FROM entries WHERE run_id = %s AND seq = %s AND at = %s"
"""Whether a plain step cut off in flight was kept: its own entry (its run, number and time
are this process's)."""
_GONE = "DELETE FROM commit_marks WHERE at < now() - interval '1 day'"
"""The marks of connections untouched for a day: processes that are gone (a mark is only
read right after its own transaction wrote it)."""
SYNCHRONOUS_COMMIT = ("on", "off", "local", "remote_write", "remote_apply")


class PostgresCheckpointer(SqlCheckpointer):
    """Checkpoints in a PostgreSQL database shared by processes on many machines.

    Args:
        dsn: ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` (or a libpq key=value string).
        synchronous_commit: the server setting for steps (``None``: the server's own).
            Decisions and effects are always committed with ``on``.
        connect_timeout: seconds a connection attempt may take before
            :class:`~agentnb.errors.StoreUnavailable`.
        reconnect_seconds: how long a lost connection is retried (with backoff).
        connections: how many connections the store may open: 1 (calls take turns on
            one), or a pool of up to N for calls from several threads at once (a worker
            driving runs concurrently; ``agentnb worker`` uses ``min(concurrency, 4)``).
        identity: who this process is, as for :class:`~agentnb.store.sqlite.SqliteCheckpointer`.

    Example:
        >>> store = PostgresCheckpointer(  # doctest: +SKIP
        ...     "postgresql://app:secret@db.internal:5432/agentnb"
        ... )
    """

    dialect = POSTGRES

    def __init__(
        self,
        dsn: str,
        *,
        synchronous_commit: str | None = None,
        connect_timeout: float = 10.0,
        reconnect_seconds: float = 30.0,
        connections: int = 1,
        identity: IdentityProvider | None = None,
    ) -> None:
        if synchronous_commit is not None and synchronous_commit not in SYNCHRONOUS_COMMIT:
            raise StoreError(
                f"synchronous_commit={synchronous_commit!r} is not a PostgreSQL level; use "
                f"one of {', '.join(SYNCHRONOUS_COMMIT)}"
            )
        provider = check_provider(identity, "PostgresCheckpointer")
        if provider is not None:
            self.identity = provider
        self.synchronous = synchronous_commit or "server"
        self._local = threading.local()
        self._machines: SqliteMachineStore | None = None
        self._listener: Listener | None = None
        self._closed = True
        self._connections = Connections(
            dsn,
            size=connections,
            reconnect_seconds=reconnect_seconds,
            connect_timeout=connect_timeout,
            settings={}
            if synchronous_commit is None
            else {"synchronous_commit": synchronous_commit},
        )
        self.dsn = self._connections.where
        self.path = self.dsn  # what the shared messages name
        try:
            with self._connections.using():
                migrate(self._session)
                self._session.raw(_GONE)
        except BaseException:
            self._connections.close()
            raise
        self._closed = False

    def __repr__(self) -> str:
        return f"<PostgresCheckpointer {self.dsn!r}>"

    @property
    def _session(self) -> Session:
        """The session of this call (see :mod:`agentnb.store.postgres_pool`)."""
        return self._connections.session

    @property
    def _lock(self) -> threading.RLock:  # type: ignore[override]
        return self._connections.lock

    def _using(self) -> AbstractContextManager[None]:
        """Around one call: the connection it holds (pooled) until it returns."""
        return self._connections.using()

    @property
    def _db(self) -> sqlite3.Connection:  # type: ignore[override]
        # The shared row functions are typed on SQLite's connection; a Session offers the
        # part of it they use (execute / executemany with ``?`` parameters, rowcount,
        # fetchone / fetchall, iteration), in PostgreSQL's spelling.
        return cast("sqlite3.Connection", self._session)

    @property
    def machines(self) -> SqliteMachineStore:
        """State-machine instances in this database (``machine.start(store=this)``)."""
        from agentnb.store.postgres_machines import PostgresMachineStore

        if self._machines is None:
            self._machines = PostgresMachineStore(self)
        return self._machines

    # -- plumbing ------------------------------------------------------------------------

    @contextmanager
    def _write(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction holding its run's advisory lock (or the database-wide one).

        ``durable`` commits it with ``synchronous_commit = on`` whatever the store's level.
        """
        with self._lock:
            self._check_open()
            session = self._session
            key = getattr(self._local, "key", None)
            topic = (
                None
                if getattr(self._local, "quiet", False)
                else getattr(self._local, "topic", None) or topic_of(key)
            )
            session.in_transaction = True
            try:
                begun = session.raw(begin(key, durable=durable, topic=topic))
                begun.nextset()
                row = begun.fetchone()
                try:
                    yield self._db
                except BaseException:
                    if not session.conn.broken:
                        session.raw("ROLLBACK")
                    raise
                if getattr(self._local, "wakes", False):
                    session.raw(f"NOTIFY {CHANNEL}")  # delivered once this commits
                told = []  # a panel watches (BEGIN's probe failed): tell it with the COMMIT
                if topic is not None and row[-1] is False:
                    told.append(announcement(session.conn, topic))
                self._commit(told)
            finally:
                session.in_transaction = False

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read-only transaction whose statements all see one snapshot of the database."""
        with self._lock:
            self._check_open()
            session = self._session
            session.in_transaction = True
            try:
                session.raw("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try:
                    yield self._db
                finally:
                    if not session.conn.broken:
                        session.raw("COMMIT")
            finally:
                session.in_transaction = False

    def _commit(self, before: Sequence[str] = ()) -> None:
        """``before``, the transaction's mark and ``COMMIT`` in one round trip."""
        session = self._session
        mark, marking = session.marking()
        try:
            session.raw("; ".join([*before, marking, "COMMIT"]))
        except Disconnected:
            # In doubt: the COMMIT may have been kept before the connection broke. The
            # mark is there if and only if it was (postgres_session).
            session.in_transaction = False
            if not session.committed(mark):
                raise

    def _reconnect(self) -> None:
        with self._lock:
            self._check_open()
            self._session.reconnect()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            self._check_open()
            rows: list[Any] = self._session.execute(sql, params).fetchall()
            return rows

    def close(self) -> None:
        with self._connections.lock:
            if not self._closed:
                self._closed = True
                self._connections.close()
                if self._listener is not None:
                    self._listener.close()

    # -- runs ----------------------------------------------------------------------------

    create_run = for_new_run(SqlCheckpointer.create_run)

    # Every other call: the parent's code, under its run's lock, again after a lost link.
    run_policy = for_run(SqlCheckpointer.run_policy)
    get_run = for_run(SqlCheckpointer.get_run)
    list_runs = reconnecting(SqlCheckpointer.list_runs)
    acquire = unannounced(for_run(SqlCheckpointer.acquire))
    _commit_step = for_run(SqlCheckpointer.commit)
    release = for_run(SqlCheckpointer.release)
    save_write = for_run(SqlCheckpointer.save_write)
    pending_writes = for_run(SqlCheckpointer.pending_writes)
    pending_tasks = for_run(SqlCheckpointer.pending_tasks)
    decide = waking(for_run(SqlCheckpointer.decide))
    requeue = waking(for_run(SqlCheckpointer.requeue))
    renew = keyed(SHARED, SqlCheckpointer.renew)
    claim_timers = keyed(None, SqlCheckpointer.claim_timers)
    release_timers = keyed(None, SqlCheckpointer.release_timers)

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        # The common step in one round trip (see _step); the rest — a lease to renew or
        # give up, a status change, a superstep's tables — in the shared transaction.
        with self._using():
            if sql_steps.plain(change):
                while True:
                    try:
                        if self._step(run_id, fence, change, lease_seconds):
                            return
                        break
                    except Disconnected:
                        self._reconnect()
            self._commit_step(run_id, fence, change, lease_seconds=lease_seconds)

    def _step(self, run_id: str, fence: int, change: StepCommit, lease_seconds: float) -> bool:
        """Write a plain step (:func:`~agentnb.store.sql_steps.plain`) as one statement, its
        own transaction: one round trip instead of three (``BEGIN`` with the run's locks,
        the write, ``COMMIT``), a prepared statement after the first few steps.

        No advisory lock is needed for it: the statement locks the run's row (``FOR
        SHARE``) as it checks the fence, so a transaction changing that row — another
        worker's lease, a decision, a deletion — is either done before (then the check
        sees its change and nothing is written) or waits until this commits. False when
        the entry was not written (the lease has less than half its time left, or is
        lost): the shared transaction decides. A connection lost with the statement in
        flight is in doubt: the entry itself says whether it committed (its run, number
        and time are this process's; nobody else writes them while it holds the lease)."""
        now = time.time()
        row = sql_steps.entry(run_id, change, now)
        topic = run_topic(run_id)
        with self._lock:
            self._check_open()
            session = self._session
            try:
                done = session.raw(
                    _STEP, (*row, run_id, fence, lease_seconds / 2, run_lock(topic), topic)
                )
            except Disconnected:
                session.ask(_SETTLED, (run_id,))
                if session.ask(_WRITTEN, (run_id, row[1], row[6]), reconnect=False) is not None:
                    return True
                raise
            return bool(done.rowcount)

    # -- claiming work (agentnb.store.postgres_claims) ------------------------------------

    # The parent's claim, its statement PostgreSQL's (FOR UPDATE SKIP LOCKED), under the
    # shared database key only: claims lock their rows themselves and never queue behind steps.
    claim = keyed(SHARED, SqlCheckpointer.claim)

    async def await_work(self, owner: str, timeout: float) -> None:
        """Wait for ``NOTIFY`` from a write that made work claimable, or ``timeout``."""
        await self.listener.await_work(owner, timeout)

    # -- live panels (agentnb.store.postgres_listener) -------------------------------------

    @property
    def listener(self) -> Listener:
        """This store's one listening connection, shared by its Worker and its panels."""
        with self._connections.lock:
            self._check_open()
            if self._listener is None:
                self._listener = Listener(self._connections.listening)
            return self._listener

    def watch(self, run_id: str, wake: Callable[[], None]) -> Watch:
        """Call ``wake()`` after every commit, by any process, to ``run_id`` or a run of its
        tree (``agentnb.store.watch``); what a :class:`~agentnb.widgets.RunView` follows."""
        return self.listener.watch(run_topic(run_id), wake)

    checkpoint = for_run(SqlCheckpointer.checkpoint)
    checkpoints = for_run(SqlCheckpointer.checkpoints)
    events = for_run(SqlCheckpointer.events)
    interruptions = for_run(SqlCheckpointer.interruptions)
    decisions = reconnecting(SqlCheckpointer.decisions)
    recorded_effect = reconnecting(SqlCheckpointer.recorded_effect)
    effects = for_run(SqlCheckpointer.effects)
    list_checkpoints = for_run(SqlCheckpointer.list_checkpoints)

    @reconnecting
    def record_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        previous = getattr(self._local, "key", None)
        self._local.key = run_id
        try:
            return super().record_effect(
                key, run_id=run_id, step=step, node=node, name=name, result_json=result_json
            )
        finally:
            self._local.key = previous

    # -- retention -------------------------------------------------------------------------

    @contextmanager
    def _write_run(self, run_id: str | None) -> Iterator[sqlite3.Connection]:
        """One transaction under ``run_id``'s lock (None: the database-wide one)."""
        if run_id is None:
            with self._write() as db:
                yield db
            return
        self._local.key = run_id
        try:
            with self._write() as db:
                yield db
        finally:
            self._local.key = None

    @contextmanager
    def _reclaiming(self) -> Iterator[Callable[[bool], tuple[int, bool]]]:
        # PostgreSQL's autovacuum reuses the space; nothing is measured or given back here.
        yield lambda changed: (0, True)

    delete_run = for_run(SqlCheckpointer.delete_run)
    prune = reconnecting(SqlCheckpointer.prune)
