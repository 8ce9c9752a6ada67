"""``SqlCheckpointer``: the checkpointer both SQL backends are, written once.

Every rule of the contract that lives in SQL — the fenced step, the lease, the claim, the
decision decided by a conditional ``UPDATE`` and audited in its transaction, the effects
ledger, retention — is here and in the ``sql_*`` row modules, in the SQL both engines
speak. A backend supplies what differs (:mod:`agentnb.store.dialect`), and its
transactions:

* ``_write(durable=...)`` — one write transaction (SQLite: ``BEGIN IMMEDIATE`` on the
  file; PostgreSQL: ``BEGIN`` with its run's advisory lock); ``durable`` commits it at
  the level decisions and effects need whatever the level for steps;
* ``_write_run(run_id)`` — one write transaction for that run (retention's);
* ``_snapshot()`` — a read transaction whose statements see one moment;
* ``_reading()`` — the connection under its lock, for the statements of one read;
* ``_read(sql, params)`` — one query, its rows;
* ``_reclaiming()`` — around a deletion, the space given back (SQLite) or nothing;
* ``_lock``, ``_db``, ``_check_open()``, ``path`` — the connection under its lock.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

from agentnb._json import loads
from agentnb.errors import StoreError
from agentnb.identity import Identity
from agentnb.store import sql_checkpoints, sql_claims, sql_decisions, sql_retention, sql_steps
from agentnb.store import sql_tasks as tasks
from agentnb.store.base import DEFAULT_LEASE_SECONDS, Checkpointer, latest_interruptions
from agentnb.store.claims import TimerClaim
from agentnb.store.decisions import Ask, approver_name, check_decision
from agentnb.store.history import CheckpointInfo
from agentnb.store.policy import ApproverPolicy, PolicyCheck, RunPolicy
from agentnb.store.records import (
    Checkpoint,
    Decision,
    Effect,
    Event,
    PendingTask,
    PendingWrite,
    RunRecord,
    Status,
)
from agentnb.store.retention import Pruned
from agentnb.store.sql_rows import DECISION_COLUMNS, RUN_SELECT, unpack
from agentnb.store.sql_rows import decision as decision_row
from agentnb.store.sql_rows import run as run_row
from agentnb.store.writes import CheckpointWrite, DecisionEdit, StepCommit

if TYPE_CHECKING:
    import datetime
    import sqlite3
    import threading

    from agentnb.store.dialect import Dialect

__all__ = ["SqlCheckpointer"]


@contextlib.contextmanager
def _locked(store: SqlCheckpointer) -> Iterator[sqlite3.Connection]:
    with store._lock:
        store._check_open()
        yield store._db


class SqlCheckpointer(Checkpointer):
    """The contract on a SQL database; :class:`~agentnb.store.sqlite.SqliteCheckpointer`
    and :class:`~agentnb.store.postgres.PostgresCheckpointer` are its backends."""

    dialect: ClassVar[Dialect]
    path: str
    _lock: threading.RLock
    _db: sqlite3.Connection
    """The connection the row functions run on (PostgreSQL's session speaks its part)."""

    _closed: bool

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the checkpointer for {self.path} is closed; open a new one")

    # -- what a backend provides -----------------------------------------------------------

    def _write(self, *, durable: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _using(self) -> AbstractContextManager[None]:
        """Around one call: the connection it holds (a pooled backend's), else nothing."""
        return contextlib.nullcontext()

    def _write_run(self, run_id: str | None) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction for ``run_id`` (None: no run's)."""
        return self._write()

    def _snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _reading(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection under its lock (SQLite: its errors typed on the way out)."""
        return _locked(self)

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _reclaiming(self) -> AbstractContextManager[Callable[[bool], tuple[int, bool]]]:
        raise NotImplementedError

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
            sql_steps.create_run(
                db,
                run,
                checkpoint,
                events,
                started_by=started_by,
                policies=policies,
                duplicate=self.dialect.duplicate(),
            )

    def run_policy(self, run_id: str) -> RunPolicy:
        with self._reading() as db:
            return sql_decisions.run_policy(db, run_id)

    def _get(self, db: sqlite3.Connection, run_id: str) -> RunRecord:
        return sql_decisions.get_run(db, run_id)

    def get_run(self, run_id: str) -> RunRecord:
        with self._reading() as db:
            return self._get(db, run_id)

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
            sql_steps.acquire(db, run_id, owner, lease_seconds)
            return self._get(db, run_id)

    def commit(self, run_id: str, fence: int, change: StepCommit, *, lease_seconds: float) -> None:
        row = sql_steps.entry(run_id, change, time.time())
        self._commit_entry(run_id, fence, change, row, lease_seconds=lease_seconds)

    def _commit_entry(
        self,
        run_id: str,
        fence: int,
        change: StepCommit,
        row: sql_steps.Entry,
        *,
        lease_seconds: float,
        tried: bool = False,
    ) -> None:
        """The step's journal entry ``row`` (its time is the step's) written in the store's
        transaction; ``tried``: the fenced INSERT alone already wrote nothing."""
        with self._write() as db:
            sql_steps.commit(
                db, run_id, fence, change, row, now=row[6], lease_seconds=lease_seconds, tried=tried
            )

    def save_write(self, run_id: str, fence: int, write: PendingWrite) -> None:
        with self._write() as db:
            sql_steps.save_write(db, run_id, fence, write)

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
            f"SELECT {tasks.HELD_COLUMNS} FROM pending_tasks WHERE run_id = ? "
            "ORDER BY step, task_id",
            (run_id,),
        )
        if not rows:
            self.get_run(run_id)
        return [tasks.held_task(run_id, row) for row in rows]

    def release(self, run_id: str, fence: int) -> None:
        with self._write() as db:
            sql_steps.release(db, run_id, fence)

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
                statement=self.dialect.claim,
            )

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
        by: str | None = None,
        *,
        comment: str | None = None,
        expected_digest: str | None = None,
        identity: Identity | None = None,
        checks: Mapping[str, PolicyCheck] | None = None,
        task: str | None = None,
        edit: DecisionEdit | None = None,
        approver: str | None = None,
    ) -> Decision:
        name = approver_name(by, approver, "decide")
        check_decision(decision, name)
        who = self._vouch(identity)
        ask = Ask(run_id, decision, name, who, comment, expected_digest, task, edit, checks or {})
        with self._write(durable=True) as db:
            found, record = sql_decisions.decide(db, ask)
        if found.error is not None:  # raised once the attempt's audit row is committed
            raise found.error
        return record

    # -- reading -------------------------------------------------------------------------

    def checkpoint(self, run_id: str, step: int | None = None) -> Checkpoint:
        with self._snapshot() as db:  # the chain and its bodies, read as of one moment
            found = sql_checkpoints.checkpoint(db, run_id, step)
        if found is None:
            self.get_run(run_id)  # RunNotFound if the run itself is missing
            raise StoreError(f"run {run_id!r} has no checkpoint at step {step}")
        return found

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        with self._reading() as db:
            found = sql_checkpoints.checkpoints(db, run_id)
        if not found:
            self.get_run(run_id)
        return found

    def events(self, run_id: str, *, after: int = 0, limit: int | None = None) -> list[Event]:
        with self._reading() as db:
            cursor = db.execute(
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

    def interruptions(self, run_id: str, tasks: Collection[str] = ()) -> dict[str, Event]:
        # The journal's key, newest first: the current pause's entry is read, not the run.
        with self._reading() as db:
            cursor = db.execute(
                "SELECT events FROM entries WHERE run_id = ? ORDER BY seq DESC", (run_id,)
            )
            try:
                newest_first = (e for (packed,) in cursor for e in reversed(unpack(run_id, packed)))
                return latest_interruptions(newest_first, tasks)
            finally:
                cursor.close()

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
        return [tasks.with_edit(decision_row(r[:-1]), r[-1]) for r in rows]

    # -- side effects ----------------------------------------------------------------------

    def recorded_effect(self, key: str) -> str | None:
        rows = self._read("SELECT result FROM effects WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def record_effect(
        self, key: str, *, run_id: str, step: int, node: str, name: str, result_json: str
    ) -> str:
        with self._write(durable=True) as db:
            # RETURNING gives a row only when this insert wrote it; else the first one kept.
            written = db.execute(
                "INSERT INTO effects VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING "
                "RETURNING result",
                (key, run_id, step, node, name, result_json, time.time()),
            ).fetchone()
            if written is None:
                written = db.execute("SELECT result FROM effects WHERE key = ?", (key,)).fetchone()
        stored: str = written[0]
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
        # One scan of the run's primary-key range, its small columns only (0012).
        with self._reading() as db:
            found = sql_checkpoints.infos(db, run_id, open_ended=self.dialect.open_listing)
        if not found:
            self.get_run(run_id)
        return found

    def delete_run(
        self, run_id: str, *, include_audit: bool = False, awaiting: bool = False
    ) -> Pruned:
        with self._reclaiming() as reclaim:
            with self._write() as db:
                audit = sql_retention.delete(
                    db, run_id, include_audit=include_audit, awaiting=awaiting
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
