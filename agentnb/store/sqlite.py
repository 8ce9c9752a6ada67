"""``SqliteCheckpointer``: the default store, one SQLite file shared by any number of processes.

Settings, and why:

* ``journal_mode=WAL`` — readers (a widget, the CLI) never block the worker writing a step.
* ``synchronous=NORMAL`` (default; pass ``synchronous="FULL"`` to change it) — in WAL mode a
  committed step survives the process or kernel crashing; a power cut or OS crash may lose
  the last few commits but never corrupts the file. ``FULL`` fsyncs every commit.
* ``busy_timeout`` (``timeout=30`` s) — a writer waits for another process's transaction
  instead of failing with "database is locked".
* ``BEGIN IMMEDIATE`` for every write — the write lock is taken up front, so two processes
  can never both read a row and then both decide to change it.

The schema is versioned in a ``schema_version`` table; numbered migrations in
``migrations/sqlite_NNNN_*.sql`` are applied on open, and a newer database is refused.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

from agentnb._json import dumps, loads
from agentnb.errors import (
    ApprovalNotPending,
    DecisionError,
    LeaseLost,
    RunBusy,
    RunNotFound,
    SchemaVersionError,
    StaleApproval,
    StoreError,
)
from agentnb.store.base import (
    DEFAULT_LEASE_SECONDS,
    Checkpointer,
    CheckpointWrite,
    StepCommit,
    check_decision,
    decision_status,
    owner_is_dead,
)
from agentnb.store.records import Checkpoint, Decision, Event, EventType, RunRecord, Status

__all__ = ["SqliteCheckpointer"]

MIGRATIONS = ("sqlite_0001_initial.sql",)
LATEST = len(MIGRATIONS)
SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")

_RUN_COLUMNS = (
    "run_id, graph, shape, status, node, step, seq, max_steps, created_at, updated_at, error, "
    "pending_digest, decided_by, decided_at, lease_owner, lease_expires, fence"
)
_EVENT_COLUMNS = "run_id, seq, step, type, node, payload, at"
_DECISION_COLUMNS = (
    "id, run_id, node, step, decision, approver, comment, digest_shown, pending_digest, "
    "accepted, reason, at"
)


def _run(row: Sequence[Any]) -> RunRecord:
    error = row[10]
    return RunRecord(
        run_id=row[0],
        graph=row[1],
        shape=row[2],
        status=Status(row[3]),
        node=row[4],
        step=row[5],
        seq=row[6],
        max_steps=row[7],
        created_at=row[8],
        updated_at=row[9],
        error=loads(error) if error else None,
        pending_digest=row[11],
        decided_by=row[12],
        decided_at=row[13],
        lease_owner=row[14],
        lease_expires=row[15],
        fence=row[16],
    )


def _event(row: Sequence[Any]) -> Event:
    return Event(row[0], row[1], row[2], row[3], row[4], loads(row[5]), row[6])


def _decision(row: Sequence[Any]) -> Decision:
    return Decision(
        id=row[0],
        run_id=row[1],
        node=row[2],
        step=row[3],
        decision=row[4],
        approver=row[5],
        comment=row[6],
        digest_shown=row[7],
        pending_digest=row[8],
        accepted=bool(row[9]),
        reason=row[10],
        at=row[11],
    )


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


class SqliteCheckpointer(Checkpointer):
    """Checkpoints in a SQLite file (or ``":memory:"``).

    Args:
        path: the database file; created (with its directory's permissions) if missing.
        timeout: seconds a write waits for another process's transaction.
        synchronous: SQLite's ``synchronous`` level, ``"NORMAL"`` (default) or ``"FULL"``.

    Example:
        >>> with SqliteCheckpointer(":memory:") as store:
        ...     store.list_runs()
        []
    """

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 30.0, synchronous: str = "NORMAL"
    ) -> None:
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise StoreError(
                f"synchronous={synchronous!r} is not a SQLite level; use one of "
                f"{', '.join(SYNCHRONOUS_LEVELS)}"
            )
        self.path = os.fspath(path)
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.path}: {exc}") from exc
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={level}")
            self._db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            self._migrate()
        except sqlite3.Error as exc:
            self._db.close()
            raise StoreError(f"cannot open {self.path} as an agentnb database: {exc}") from exc
        except BaseException:
            self._db.close()
            raise
        self._closed = False

    def __repr__(self) -> str:
        return f"<SqliteCheckpointer {self.path!r}>"

    # -- plumbing ------------------------------------------------------------------------

    def _version(self) -> int:
        try:
            row = self._db.execute("SELECT max(version) FROM schema_version").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return 0
            raise
        return int(row[0] or 0)

    def _migrate(self) -> None:
        if self._version() == LATEST:
            return
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version "
                    "(version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
                )
                version = self._version()
                if version > LATEST:
                    raise SchemaVersionError(self.path, version, LATEST)
                folder = resources.files("agentnb.store") / "migrations"
                for number, name in enumerate(MIGRATIONS[version:], start=version + 1):
                    for statement in _statements((folder / name).read_text("utf-8")):
                        self._db.execute(statement)
                    self._db.execute(
                        "INSERT INTO schema_version VALUES (?, ?)", (number, time.time())
                    )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the checkpointer for {self.path} is closed; open a new one")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._check_open()
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise StoreError(f"cannot write to {self.path}: {exc}") from exc
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:  # pragma: no cover - disk full, I/O error
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise StoreError(f"cannot commit to {self.path}: {exc}") from exc

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
        self, run: RunRecord, checkpoint: CheckpointWrite, events: Sequence[Event]
    ) -> None:
        with self._write() as db:
            try:
                db.execute(
                    f"INSERT INTO runs ({_RUN_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run.run_id,
                        run.graph,
                        run.shape,
                        str(run.status),
                        run.node,
                        run.step,
                        run.seq,
                        run.max_steps,
                        run.created_at,
                        run.updated_at,
                        None if run.error is None else dumps(run.error),
                        run.pending_digest,
                        None,
                        None,
                        run.lease_owner,
                        run.lease_expires,
                        run.fence,
                    ),
                )
            except sqlite3.IntegrityError:
                raise StoreError(
                    f"a run with id {run.run_id!r} already exists; pick a new id"
                ) from None
            db.execute(
                "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?)",
                (run.run_id, checkpoint.step, checkpoint.node, checkpoint.state_json, time.time()),
            )
            self._insert_events(db, events)

    @staticmethod
    def _insert_events(db: sqlite3.Connection, events: Sequence[Event]) -> None:
        db.executemany(
            f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(e.run_id, e.seq, e.step, e.type, e.node, dumps(e.payload), e.at) for e in events],
        )

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise RunNotFound(run_id)
        return _run(rows[0])

    def list_runs(self, status: Status | str | None = None) -> list[RunRecord]:
        if status is None:
            rows = self._read(f"SELECT {_RUN_COLUMNS} FROM runs ORDER BY created_at DESC")
        else:
            rows = self._read(
                f"SELECT {_RUN_COLUMNS} FROM runs WHERE status = ? ORDER BY created_at DESC",
                (str(status),),
            )
        return [_run(r) for r in rows]

    # -- driving -------------------------------------------------------------------------

    def acquire(
        self, run_id: str, owner: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> RunRecord:
        with self._write() as db:
            row = db.execute(
                "SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            holder, expires = row
            now = time.time()
            if holder not in (None, owner) and expires > now and not owner_is_dead(holder):
                raise RunBusy(run_id, holder, expires)
            updated = db.execute(
                "UPDATE runs SET lease_owner = ?, lease_expires = ?, fence = fence + 1 "
                f"WHERE run_id = ? RETURNING {_RUN_COLUMNS}",
                (owner, now + lease_seconds, run_id),
            ).fetchone()
        return _run(updated)

    def commit(
        self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float
    ) -> RunRecord:
        now = time.time()
        events = change.events
        with self._write() as db:
            row = db.execute(
                "UPDATE runs SET status = ?, node = ?, step = ?, seq = coalesce(?, seq), "
                "updated_at = ?, error = ?, pending_digest = ?, "
                "lease_owner = CASE WHEN ? THEN NULL ELSE lease_owner END, lease_expires = ? "
                f"WHERE run_id = ? AND fence = ? AND lease_owner IS NOT NULL "
                f"RETURNING {_RUN_COLUMNS}",
                (
                    str(change.status),
                    change.node,
                    change.step,
                    events[-1].seq if events else None,
                    now,
                    None if change.error is None else dumps(change.error),
                    change.pending_digest,
                    change.release,
                    None if change.release else now + lease_seconds,
                    run_id,
                    fence,
                ),
            ).fetchone()
            if row is None:
                raise LeaseLost(run_id, fence)
            cp = change.checkpoint
            if cp is not None:
                db.execute(
                    "INSERT OR REPLACE INTO checkpoints VALUES (?, ?, ?, ?, ?)",
                    (run_id, cp.step, cp.node, cp.state_json, now),
                )
            if events:
                self._insert_events(db, events)
        return _run(row)

    def release(self, run_id: str, fence: int) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL "
                "WHERE run_id = ? AND fence = ?",
                (run_id, fence),
            )

    # -- decisions -----------------------------------------------------------------------

    def decide(
        self,
        run_id: str,
        decision: str,
        approver: str,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
    ) -> Decision:
        check_decision(decision, approver)
        refusal: DecisionError | RunNotFound | None = None
        with self._write() as db:
            now = time.time()
            row = db.execute(
                "UPDATE runs SET status = ?, seq = seq + 1, decided_by = ?, decided_at = ?, "
                "updated_at = ? WHERE run_id = ? AND status = 'pending' "
                "AND (? IS NULL OR pending_digest = ?) "
                "RETURNING node, step, seq, pending_digest",
                (
                    str(decision_status(decision)),
                    approver,
                    now,
                    now,
                    run_id,
                    expected_digest,
                    expected_digest,
                ),
            ).fetchone()
            if row is not None:
                node, step, seq, digest = row
                kind = EventType.APPROVED if decision == "approved" else EventType.REJECTED
                payload = {"by": approver, "comment": comment, "digest": digest}
                self._insert_events(db, [Event(run_id, seq, step, kind, node, payload, now)])
                accepted, reason = True, None
            else:
                current = db.execute(
                    "SELECT status, node, step, pending_digest, decided_by FROM runs "
                    "WHERE run_id = ?",
                    (run_id,),
                ).fetchone()
                if current is None:
                    node = step = digest = None
                    refusal, reason = RunNotFound(run_id), "unknown run"
                else:
                    status, node, step, digest, decided_by = current
                    if status != Status.PENDING:
                        refusal = ApprovalNotPending(run_id, status, decided_by)
                        reason = f"not pending: {status}"
                    else:
                        refusal = StaleApproval(run_id, expected_digest or "", digest or "")
                        reason = "stale: the pending state changed"
                accepted = False
            cursor = db.execute(
                f"INSERT INTO decisions ({_DECISION_COLUMNS}) "
                "VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (
                    run_id,
                    node,
                    step,
                    decision,
                    approver,
                    comment,
                    expected_digest,
                    digest,
                    int(accepted),
                    reason,
                    now,
                ),
            )
            decision_id = cursor.fetchone()[0]
        if refusal is not None:
            raise refusal
        return Decision(
            decision_id,
            run_id,
            node,
            step,
            decision,
            approver,
            comment,
            expected_digest,
            digest,
            accepted=True,
            reason=None,
            at=now,
        )

    # -- reading -------------------------------------------------------------------------

    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        if step is None:
            rows = self._read(
                "SELECT step, node, state, at FROM checkpoints WHERE run_id = ? "
                "ORDER BY step DESC LIMIT 1",
                (run_id,),
            )
        else:
            rows = self._read(
                "SELECT step, node, state, at FROM checkpoints WHERE run_id = ? AND step = ?",
                (run_id, step),
            )
        if not rows:
            self.get_run(run_id)  # RunNotFound if the run itself is missing
            raise StoreError(f"run {run_id!r} has no checkpoint at step {step}")
        s, node, state, at = rows[0]
        return Checkpoint(run_id, s, node, loads(state), at)

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        rows = self._read(
            "SELECT step, node, state, at FROM checkpoints WHERE run_id = ? ORDER BY step",
            (run_id,),
        )
        if not rows:
            self.get_run(run_id)
        return [Checkpoint(run_id, s, node, loads(state), at) for s, node, state, at in rows]

    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        rows = self._read(
            f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (run_id, after, -1 if limit is None else limit),
        )
        if not rows and after == 0:
            self.get_run(run_id)
        return [_event(r) for r in rows]

    def decisions(self, run_id: str | None = None) -> list[Decision]:
        if run_id is None:
            rows = self._read(f"SELECT {_DECISION_COLUMNS} FROM decisions ORDER BY id")
        else:
            rows = self._read(
                f"SELECT {_DECISION_COLUMNS} FROM decisions WHERE run_id = ? ORDER BY id",
                (run_id,),
            )
        return [_decision(r) for r in rows]
