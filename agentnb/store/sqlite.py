"""``SqliteCheckpointer``: the default store, one SQLite file shared by any number of processes.

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
* ``BEGIN IMMEDIATE`` for every write — the write lock is taken up front, so two processes
  can never both read a row and then both decide to change it.

The schema is versioned in a ``schema_version`` table; numbered migrations in
``migrations/sqlite_NNNN_*.sql`` are applied on open, and a newer database is refused.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import datetime

from agentnb._json import dumps, loads
from agentnb.errors import (
    LeaseLost,
    RunBusy,
    RunNotFound,
    StoreError,
)
from agentnb.store.base import (
    DEFAULT_LEASE_SECONDS,
    Checkpointer,
    CheckpointWrite,
    DecisionEdit,
    StepCommit,
    check_decision,
    check_task_edit,
    decision_status,
    edit_conflict,
    owner_is_dead,
    task_refusal,
)
from agentnb.store.sql_tasks import (
    HELD_COLUMNS,
    held_task,
    settle,
    task_edit,
    with_edit,
)

if TYPE_CHECKING:
    from agentnb.store.machines import SqliteMachineStore
from agentnb.identity import Identity, IdentityProvider, check_provider
from agentnb.store import (
    chains,
    sql_checkpoints,
    sql_claims,
    sql_decisions,
    sql_retention,
)
from agentnb.store.claims import TimerClaim
from agentnb.store.history import CheckpointInfo
from agentnb.store.migrate import LATEST, migrate
from agentnb.store.policy import (
    ApproverPolicy,
    PolicyCheck,
    RunPolicy,
)
from agentnb.store.records import (
    Checkpoint,
    Decision,
    Effect,
    Event,
    EventType,
    PendingTask,
    PendingWrite,
    RunRecord,
    Status,
)
from agentnb.store.retention import Pruned
from agentnb.store.sql_rows import DECISION_COLUMNS, RUN_SELECT, pack, unpack
from agentnb.store.sql_rows import decision as decision_row
from agentnb.store.sql_rows import run as run_row

__all__ = ["LATEST", "SqliteCheckpointer"]

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
_ENTRY = "INSERT INTO entries (run_id, seq, step, node, state, events, at, tasks, kind)"
# The step's statements, built once: sqlite3 finds its prepared statement by the text.
_FENCED_ENTRY = (
    f"{_ENTRY} SELECT ?, ?, ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM runs WHERE "
    "run_id = ? AND fence = ? AND lease_owner IS NOT NULL AND status = 'running' "
    "AND lease_expires > ?)"
)
_ENTRY_VALUES = f"{_ENTRY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
DURABLE = "FULL"
"""The least ``synchronous`` level decisions, refusals and effects are committed at."""
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
            store._writes += 1
            if store._wal_over or store._writes % WAL_CHECK_EVERY == 0:
                store._bound_wal()
        finally:
            try:
                if self.switch:
                    db.execute(f"PRAGMA synchronous={store.synchronous}")
            finally:
                store._lock.release()


class SqliteCheckpointer(Checkpointer):
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

    # -- plumbing ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the checkpointer for {self.path} is closed; open a new one")

    def _write(self, *, durable: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction (``with store._write() as db``); ``durable``
        commits it at ``FULL`` at least."""
        return _Transaction(self, durable and self._durable != self.synchronous)

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

    # -- runs ----------------------------------------------------------------------------

    def create_run(
        self,
        run: RunRecord,
        checkpoint: CheckpointWrite,
        events: Sequence[Event],
        *,
        started_by: Identity | None = None,
        policies: Mapping[str, ApproverPolicy] | None = None,
    ) -> None:
        with self._write() as db:
            try:
                db.execute(
                    "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, "
                    "status_at, fence) VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                    (
                        run.run_id,
                        run.graph,
                        run.shape,
                        str(run.status),
                        run.max_steps,
                        run.created_at,
                        run.created_at,
                    ),
                )
            except self._duplicate_errors():
                raise StoreError(
                    f"a run with id {run.run_id!r} already exists; pick a new id"
                ) from None
            db.execute(
                f"{_ENTRY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run.run_id,
                    events[-1].seq,
                    checkpoint.step,
                    checkpoint.node,
                    checkpoint.state_json,
                    pack(events),
                    run.created_at,
                    checkpoint.tasks_json,
                    chains.SNAPSHOT,  # a run's first checkpoint: never a delta
                ),
            )
            if started_by is not None or policies:
                db.execute(
                    "INSERT INTO run_policies VALUES (?, ?, ?)",
                    (
                        run.run_id,
                        None if started_by is None else dumps(started_by.to_json()),
                        dumps({k: p.to_json() for k, p in (policies or {}).items()}),
                    ),
                )

    def _duplicate_errors(self) -> tuple[type[Exception], ...]:
        """The driver's errors for inserting a run id that exists (PostgreSQL: its own)."""
        return (sqlite3.IntegrityError,)

    def run_policy(self, run_id: str) -> RunPolicy:
        with self._lock:
            self._check_open()
            return sql_decisions.run_policy(self._db, run_id)

    def _get(self, db: sqlite3.Connection, run_id: str) -> RunRecord:
        return sql_decisions.get_run(db, run_id)

    def get_run(self, run_id: str) -> RunRecord:
        with self._lock:
            self._check_open()
            return self._get(self._db, run_id)

    def list_runs(self, status: Status | str | None = None) -> list[RunRecord]:
        if status is None:
            rows = self._read(f"{RUN_SELECT} ORDER BY r.created_at DESC")
        else:
            rows = self._read(
                f"{RUN_SELECT} WHERE r.status = ? ORDER BY r.created_at DESC", (str(status),)
            )
        return [run_row(r) for r in rows]

    # -- driving -------------------------------------------------------------------------

    def acquire(
        self, run_id: str, owner: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> RunRecord:
        with self._write() as db:
            now = time.time()
            # The claim is a conditional update: free, expired or already ours.
            claimed = db.execute(
                "UPDATE runs SET lease_owner = ?, lease_expires = ?, fence = fence + 1 "
                "WHERE run_id = ? AND (lease_owner IS NULL OR lease_owner = ? "
                "OR lease_expires <= ?)",
                (owner, now + lease_seconds, run_id, owner, now),
            ).rowcount
            if not claimed:
                row = db.execute(
                    "SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                if row is None:
                    raise RunNotFound(run_id)
                holder, expires = row
                if not owner_is_dead(holder):
                    raise RunBusy(run_id, holder, expires)
                db.execute(
                    "UPDATE runs SET lease_owner = ?, lease_expires = ?, fence = fence + 1 "
                    "WHERE run_id = ?",
                    (owner, now + lease_seconds, run_id),
                )
            return self._get(db, run_id)

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        now = time.time()
        events = change.events
        if not events:
            raise StoreError("a commit must carry at least one event")
        cp = change.checkpoint
        kind, body = (None, None) if cp is None else chains.row(cp)
        entry = (
            run_id,
            events[-1].seq,
            change.step,
            change.node,
            body,
            pack(events),
            now,
            None if cp is None else cp.tasks_json,
            kind,
        )
        with self._write() as db:
            # Fast path, the common step: the run stays running and the lease has more than
            # half its time left, so the run's row does not change — one INSERT, fenced by
            # a read of the row.
            if change.status == Status.RUNNING and not change.release:
                inserted = db.execute(
                    _FENCED_ENTRY, (*entry, run_id, fence, now + lease_seconds / 2)
                ).rowcount
                if inserted:
                    settle(db, run_id, change)
                    return
            updated = db.execute(
                "UPDATE runs SET status = ?, status_at = ?, error = ?, pending_digest = ?, "
                "lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END, "
                "lease_expires = ? WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL",
                (
                    str(change.status),
                    now,
                    None if change.error is None else dumps(change.error),
                    change.pending_digest,
                    change.release,
                    None if change.release else now + lease_seconds,
                    run_id,
                    fence,
                ),
            ).rowcount
            if not updated:
                raise LeaseLost(run_id, fence)
            db.execute(_ENTRY_VALUES, entry)
            settle(db, run_id, change)

    def save_write(self, run_id: str, fence: int, write: PendingWrite) -> None:
        with self._write() as db:
            inserted = db.execute(
                "INSERT OR IGNORE INTO pending_writes SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS "
                "(SELECT 1 FROM runs WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL)",
                (
                    run_id,
                    write.step,
                    write.task_id,
                    write.node,
                    dumps(write.delta),
                    pack(write.events),
                    write.at,
                    run_id,
                    fence,
                ),
            ).rowcount
            if (
                not inserted
                and not db.execute(
                    "SELECT 1 FROM runs WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL",
                    (run_id, fence),
                ).fetchone()
            ):
                raise LeaseLost(run_id, fence)

    def pending_writes(self, run_id: str, step: int) -> list[PendingWrite]:
        rows = self._read(
            "SELECT task_id, node, delta, events, at FROM pending_writes "
            "WHERE run_id = ? AND step = ? ORDER BY at, task_id",
            (run_id, step),
        )
        return [
            PendingWrite(run_id, step, task, node, loads(delta), unpack(run_id, events), at)
            for task, node, delta, events, at in rows
        ]

    def pending_tasks(self, run_id: str) -> list[PendingTask]:
        rows = self._read(
            f"SELECT {HELD_COLUMNS} FROM pending_tasks WHERE run_id = ? ORDER BY step, task_id",
            (run_id,),
        )
        if not rows:
            self.get_run(run_id)
        return [held_task(run_id, row) for row in rows]

    def release(self, run_id: str, fence: int) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL "
                "WHERE run_id = ? AND fence = ?",
                (run_id, fence),
            )

    # -- claiming work (rules: agentnb.store.claims) ---------------------------------------

    def claim(
        self,
        owner: str,
        graphs: Mapping[str, str],
        *,
        limit: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        run_ids: Sequence[str] | None = None,
    ) -> list[RunRecord]:
        with self._write() as db:
            return sql_claims.claim(
                db,
                owner,
                graphs,
                limit=limit,
                lease_seconds=lease_seconds,
                run_ids=run_ids,
                statement=self._claim_update,
            )

    # The claim's UPDATE (PostgreSQL: its own, with FOR UPDATE SKIP LOCKED).
    _claim_update = staticmethod(sql_claims.update)

    def renew(
        self, owner: str, run_ids: Sequence[str], *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> list[str]:
        with self._write() as db:
            return sql_claims.renew(db, owner, run_ids, lease_seconds)

    def requeue(self, run_id: str, fence: int) -> bool:
        with self._write() as db:
            return sql_claims.requeue(db, run_id, fence)

    def claim_timers(
        self,
        owner: str,
        machines: Sequence[str],
        *,
        limit: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        now: float | None = None,
    ) -> list[TimerClaim]:
        with self._write() as db:
            return sql_claims.claim_timers(
                db, owner, machines, limit=limit, lease_seconds=lease_seconds, now=now
            )

    def release_timers(self, instance_id: str, owner: str) -> None:
        with self._write() as db:
            sql_claims.release_timers(db, instance_id, owner)

    # -- decisions -----------------------------------------------------------------------

    def decide(
        self,
        run_id: str,
        decision: str,
        approver: str,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
        identity: Identity | None = None,
        checks: Mapping[str, PolicyCheck] | None = None,
        task: str | None = None,
        edit: DecisionEdit | None = None,
    ) -> Decision:
        check_decision(decision, approver)
        who = self._vouch(identity)
        if task is not None or self._read(
            "SELECT 1 FROM pending_tasks WHERE run_id = ? AND status = 'pending'", (run_id,)
        ):
            check_task_edit(edit)
            return self._decide_task(
                run_id, decision, approver, comment, expected_digest, task, edit, who, checks
            )
        with self._write(durable=True) as db:
            record, refused = sql_decisions.decide(
                db,
                run_id,
                decision,
                approver,
                comment=comment,
                expected_digest=expected_digest,
                who=who,
                checks=checks or {},
                edit=edit,
            )
        if refused is not None:  # raised once the attempt's audit row is committed
            raise refused
        return record

    def _decide_task(
        self,
        run_id: str,
        decision: str,
        approver: str,
        comment: str | None,
        expected_digest: str | None,
        task: str | None,
        edit: DecisionEdit | None,
        who: Identity,
        checks: Mapping[str, PolicyCheck] | None,
    ) -> Decision:
        """Decide one held task of a superstep, exactly once: a conditional update of its row.

        The interrupt's approver policy is checked as for a whole run, at the task's node.
        """
        refusal: Exception | None = None
        reason: str | None = None
        identity_json = dumps(who.to_json())
        with self._write(durable=True) as db:
            now = time.time()
            try:
                current = self._get(db, run_id)
            except RunNotFound:
                current = None
            if current is None:
                db.execute(
                    f"INSERT INTO decisions ({DECISION_COLUMNS}) "
                    "VALUES (NULL, ?, ?, NULL, ?, ?, ?, ?, NULL, 0, 'unknown run', ?, ?)",
                    (
                        run_id,
                        task,
                        decision,
                        approver,
                        comment,
                        expected_digest,
                        now,
                        identity_json,
                    ),
                )
        if current is None:
            raise RunNotFound(run_id)
        with self._write(durable=True) as db:
            current = self._get(db, run_id)  # again, under the write lock
            if task is None:
                waiting = db.execute(
                    "SELECT task_id FROM pending_tasks WHERE run_id = ? AND status = 'pending'",
                    (run_id,),
                ).fetchall()
                task = waiting[0][0] if len(waiting) == 1 else None
            held_node = db.execute(
                "SELECT node FROM pending_tasks WHERE run_id = ? AND task_id = ? "
                "AND status = 'pending'",
                (run_id, task),
            ).fetchone()
            denied: tuple[Exception, str] | None = None
            if held_node is not None and current.status == Status.PENDING:
                at_task = dataclasses.replace(current, node=held_node[0])
                denied = sql_decisions.policy_refusal(
                    db, at_task, who, decision, approver, checks or {}
                )
            if denied is None and decision == "approved" and held_node is not None:
                held = [
                    held_task(run_id, r)
                    for r in db.execute(
                        f"SELECT {HELD_COLUMNS} FROM pending_tasks WHERE run_id = ?", (run_id,)
                    )
                ]
                denied = edit_conflict(run_id, edit, task, held)
            row = (
                None
                if denied is not None
                else db.execute(
                    "UPDATE pending_tasks SET status = ?, decided_by = ?, decided_at = ?, "
                    "edit = ? "
                    "WHERE run_id = ? AND task_id = ? AND status = 'pending' "
                    "AND (? IS NULL OR digest = ?) "
                    "AND EXISTS (SELECT 1 FROM runs WHERE run_id = ? AND status = 'pending') "
                    "RETURNING step, node, digest",
                    (
                        decision,
                        approver,
                        now,
                        task_edit(edit) if decision == "approved" else None,
                        run_id,
                        task,
                        expected_digest,
                        expected_digest,
                        run_id,
                    ),
                ).fetchone()
            )
            if row is not None:
                step, node, digest = row
                left = db.execute(
                    "SELECT count(*) FROM pending_tasks WHERE run_id = ? AND status = 'pending'",
                    (run_id,),
                ).fetchone()[0]
                if decision == "rejected" or not left:
                    db.execute(
                        "UPDATE runs SET status = ?, status_at = ?, decided_by = ?, "
                        "decided_at = ? WHERE run_id = ?",
                        (str(decision_status(decision)), now, approver, now, run_id),
                    )
                kind = EventType.APPROVED if decision == "approved" else EventType.REJECTED
                payload = {"by": approver, "identity": who.name, "comment": comment}
                payload.update(digest=digest, task=task)
                if edit is not None:
                    payload.update(edit.audit())
                event = Event(run_id, current.seq + 1, current.step, kind, node, payload, now)
                db.execute(
                    f"{_ENTRY} VALUES (?, ?, ?, ?, NULL, ?, ?, NULL, NULL)",
                    (run_id, event.seq, current.step, current.node, pack([event]), now),
                )
            else:
                held = [
                    held_task(run_id, r)
                    for r in db.execute(
                        f"SELECT {HELD_COLUMNS} FROM pending_tasks WHERE run_id = ?", (run_id,)
                    )
                ]
                refusal, reason = task_refusal(run_id, task, held, current, expected_digest)
                if denied is not None:
                    refusal, reason = denied
                step, digest = current.step, None
            record = sql_decisions.audit(
                db,
                run_id,
                task,
                step,
                decision,
                approver,
                comment,
                expected_digest,
                digest,
                reason=reason,
                accepted=refusal is None,
                now=now,
                who=who,
                edit=edit,
            )
        if refusal is not None:
            raise refusal
        return record

    # -- reading -------------------------------------------------------------------------

    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        with self._lock:
            self._check_open()
            with self._snapshot() as db:  # the chain and its bodies, read as of one moment
                found = sql_checkpoints.checkpoint(db, run_id, step)
        if found is None:
            self.get_run(run_id)  # RunNotFound if the run itself is missing
            raise StoreError(f"run {run_id!r} has no checkpoint at step {step}")
        return found

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        with self._lock:
            self._check_open()
            found = sql_checkpoints.checkpoints(self._db, run_id)
        if not found:
            self.get_run(run_id)
        return found

    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        with self._lock:
            self._check_open()
            cursor = self._db.execute(
                "SELECT events FROM entries WHERE run_id = ? AND seq > ? ORDER BY seq",
                (run_id, after),
            )
            found: list[Event] = []
            for (packed,) in cursor:
                found.extend(e for e in unpack(run_id, packed) if e.seq > after)
                if limit is not None and len(found) >= limit:
                    cursor.close()
                    return found[:limit]
        if not found and after == 0:
            self.get_run(run_id)
        return found

    def decisions(self, run_id: str | None = None) -> list[Decision]:
        edits = "LEFT JOIN decision_edits ON decision_id = id"
        if run_id is None:
            rows = self._read(f"SELECT {DECISION_COLUMNS}, edit FROM decisions {edits} ORDER BY id")
        else:
            rows = self._read(
                f"SELECT {DECISION_COLUMNS}, edit FROM decisions {edits} WHERE run_id = ? "
                "ORDER BY id",
                (run_id,),
            )
        return [with_edit(decision_row(r[:-1]), r[-1]) for r in rows]

    # -- side effects ----------------------------------------------------------------------

    def recorded_effect(self, key: str) -> str | None:
        rows = self._read("SELECT result FROM effects WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def record_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        with self._write(durable=True) as db:
            db.execute(
                "INSERT OR IGNORE INTO effects VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, run_id, step, node, name, result_json, time.time()),
            )
            stored: str = db.execute("SELECT result FROM effects WHERE key = ?", (key,)).fetchone()[
                0
            ]
        return stored

    def effects(self, run_id: str) -> list[Effect]:
        rows = self._read(
            "SELECT key, run_id, step, node, name, result, at FROM effects WHERE run_id = ? "
            "ORDER BY at",
            (run_id,),
        )
        return [Effect(k, r, s, n, name, loads(res), at) for k, r, s, n, name, res, at in rows]

    # -- history and retention (rules: agentnb.store.retention) ----------------------------

    def list_checkpoints(self, run_id: str) -> list[CheckpointInfo]:
        # One scan of the covering index entries_chain (0008); no entry's state is read.
        with self._lock:
            self._check_open()
            found = sql_checkpoints.infos(self._db, run_id)
        if not found:
            self.get_run(run_id)
        return found

    def delete_run(self, run_id: str, *, include_audit: bool = False) -> Pruned:
        with self._reclaiming() as reclaim:
            with self._write() as db:
                audit = sql_retention.delete(
                    db, run_id, include_audit=include_audit, now=time.time()
                )
            freed, returned = reclaim(True)
        return Pruned((run_id,), audit, freed, returned)

    def prune(
        self,
        *,
        before: float | datetime.datetime,
        status: Status | str | None = None,
        include_audit: bool = False,
    ) -> Pruned:
        run_ids, statuses, until = sql_retention.prune_candidates(self._read, before, status)
        with self._reclaiming() as reclaim:
            deleted, audit = sql_retention.prune(
                self._write_run, self._get, run_ids, statuses, until, include_audit=include_audit
            )
            freed, returned = reclaim(bool(deleted or audit))
        return Pruned(tuple(deleted), audit, freed, returned)

    def _write_run(self, run_id: str | None) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction for ``run_id`` (None: no run's); PostgreSQL locks its key."""
        return self._write()

    @contextmanager
    def _reclaiming(self) -> Iterator[Callable[[bool], tuple[int, bool]]]:
        """Under the store's lock, around a deletion: ``reclaim(changed)`` gives the freed
        pages back when something was deleted; the bytes freed, and whether it could."""
        with self._lock:
            before = sql_retention.size(self._db)

            def reclaim(changed: bool) -> tuple[int, bool]:
                returned = sql_retention.return_space(self._db, self.path) if changed else True
                return max(before - sql_retention.size(self._db), 0), returned

            yield reclaim
