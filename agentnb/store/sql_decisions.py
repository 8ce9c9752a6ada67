"""The SQL checkpointers' decision transaction: the run's facts read, the rules applied,
the outcome written.

Everything here runs inside one write transaction opened by
:meth:`SqlCheckpointer.decide <agentnb.store.sql.SqlCheckpointer.decide>` (SQLite:
``BEGIN IMMEDIATE``; PostgreSQL: under the run's advisory lock): the lock is held from the
first read to the commit, so what is checked cannot change before the run's row is
updated — in this process or any other. The rules themselves are
:func:`agentnb.store.decisions.verdict`'s; this module only reads and writes rows. The
refusal (if any) is returned, not raised, so that the attempt's audit row commits with the
transaction.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from agentnb._json import dumps, loads
from agentnb.errors import RunNotFound
from agentnb.identity import Identity
from agentnb.store import chains, sql_checkpoints, sql_tasks
from agentnb.store.decisions import Ask, Pause, Verdict, verdict
from agentnb.store.policy import ApproverPolicy, RunPolicy
from agentnb.store.records import Decision, EventType, RunRecord
from agentnb.store.sql_rows import AUDIT_COLUMNS, ENTRY, RUN_SELECT, pack, unpack
from agentnb.store.sql_rows import run as run_row

__all__ = ["audit", "decide", "get_run", "pause", "run_policy"]


def get_run(db: sqlite3.Connection, run_id: str) -> RunRecord:
    row = db.execute(f"{RUN_SELECT} WHERE r.run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise RunNotFound(run_id)
    return run_row(row)


def run_policy(db: sqlite3.Connection, run_id: str) -> RunPolicy:
    """The policy stored when the run started (empty for a run from before version 4)."""
    row = db.execute(
        "SELECT started_by, interrupts FROM run_policies WHERE run_id = ?", (run_id,)
    ).fetchone()
    if row is None:
        get_run(db, run_id)  # RunNotFound for an unknown run; else no policy
        return RunPolicy()
    started_by, interrupts = row
    return RunPolicy(
        None if started_by is None else Identity.from_json(loads(started_by)),
        {k: ApproverPolicy.from_json(v) for k, v in loads(interrupts).items()},
    )


def pause(db: sqlite3.Connection, run_id: str) -> Pause:
    """The facts a decision about ``run_id`` is checked against, read in its transaction."""
    row = db.execute(f"{RUN_SELECT} WHERE r.run_id = ?", (run_id,)).fetchone()
    if row is None:
        return Pause(None)

    def after() -> str | None:
        """The node the pause came after (its own ``interrupted`` event says), if any."""
        rows = db.execute(
            "SELECT events FROM entries WHERE run_id = ? ORDER BY seq DESC", (run_id,)
        )
        try:
            for event in (e for (packed,) in rows for e in reversed(unpack(run_id, packed))):
                if event.type == EventType.INTERRUPTED:
                    found: str | None = event.payload.get("after")
                    return found
            return None
        finally:
            rows.close()

    def state() -> dict[str, Any]:
        return sql_checkpoints.state(db, run_id)

    return Pause(run_row(row), sql_tasks.held(db, run_id), run_policy(db, run_id), after, state)


def decide(db: sqlite3.Connection, ask: Ask) -> tuple[Verdict, Decision]:
    """Decide (or refuse) ``ask`` by the rules and write it, audit included, in the
    caller's transaction; the verdict (its ``error`` for the caller to raise once this
    commits) and the audit's line."""
    facts = pause(db, ask.run_id)
    found = verdict(facts, ask, time.time())
    event = found.event
    if event is not None and facts.run is not None:  # accepted
        at, run_id = found.at, ask.run_id
        if found.task is not None:
            sql_tasks.decide(db, found.task)
        if found.status is not None:
            db.execute(
                "UPDATE runs SET status = ?, status_at = ?, decided_by = ?, decided_at = ? "
                "WHERE run_id = ? AND status = 'pending'",
                (str(found.status), at, ask.by, at, run_id),
            )
        edit = found.edit
        state = None if edit is None else edit.state_json  # an edit: stored whole
        db.execute(
            f"{ENTRY} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                event.seq,
                event.step,
                facts.run.node,
                state,
                pack([event]),
                at,
                None if state is None or edit is None else edit.tasks_json,
                None if state is None else chains.SNAPSHOT,
            ),
        )
    return found, audit(db, found)


def audit(db: sqlite3.Connection, found: Verdict) -> Decision:
    """Append the attempt to the audit (and, accepted, what its approval carried; an answer
    also goes to the effects ledger): a whole run's decision and a held task's alike."""
    ask = found.ask
    decision_id = db.execute(
        f"INSERT INTO decisions ({AUDIT_COLUMNS}) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            ask.run_id,
            found.node,
            found.step,
            ask.decision,
            ask.by,
            ask.comment,
            ask.expected_digest,
            found.digest,
            int(found.accepted),
            found.reason,
            found.at,
            dumps(ask.who.to_json()),
        ),
    ).fetchone()[0]
    edit = found.edit
    if edit is not None:  # only an accepted approval carries one
        db.execute("INSERT INTO decision_edits VALUES (?, ?)", (decision_id, dumps(edit.audit())))
        if edit.answer_key is not None and edit.answer_json is not None:
            node = "" if found.event is None else found.event.node or ""
            db.execute(
                "INSERT INTO effects VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (edit.answer_key, ask.run_id, found.step or 0, node, "answer", edit.answer_json,
                 found.at),
            )  # fmt: skip
    return found.record(decision_id)
