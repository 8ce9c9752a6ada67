"""The approver policy and identities in the SQLite file: migration 0004 and old files."""

from __future__ import annotations

import json
import sqlite3
import time
from importlib import resources
from pathlib import Path

import pytest

from agentnb import Identity, NotAuthorized, SqliteCheckpointer, StateGraph, Status
from agentnb.errors import StoreError
from agentnb.store.migrate import LATEST, MIGRATIONS, _statements


def version_3_file(path: Path) -> None:
    """A database exactly as agentnb wrote it at schema version 3, with a pending run and
    one refused decision in the old format."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL)")
    folder = resources.files("agentnb.store") / "migrations"
    for number, name in enumerate(MIGRATIONS[:3], start=1):
        for statement in _statements((folder / name).read_text("utf-8")):
            db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?, ?)", (number, time.time()))
    now = time.time()
    db.execute(
        "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, status_at, "
        "pending_digest, fence) VALUES ('old', 'pay', 's', 'pending', 5, ?, ?, 'd1', 1)",
        (now, now),
    )
    events = [
        [1, 0, "run_started", "pay", {"graph": "pay", "state": {}, "max_steps": 5}, now],
        [2, 0, "interrupted", "pay", {"when": "before", "after": None, "digest": "d1"}, now],
    ]
    db.execute(
        "INSERT INTO entries (run_id, seq, step, node, state, events, at) "
        "VALUES ('old', 2, 0, 'pay', '{}', ?, ?)",
        (json.dumps(events), now),
    )
    db.execute(
        "INSERT INTO decisions (run_id, node, step, decision, approver, comment, digest_shown, "
        "pending_digest, accepted, reason, at) VALUES "
        "('old', 'pay', 0, 'approved', 'ada', NULL, 'x', 'd1', 0, 'stale: changed', ?)",
        (now,),
    )
    db.close()


def test_a_version_3_file_upgrades_and_its_runs_stay_decidable(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite3"
    version_3_file(path)
    with SqliteCheckpointer(path, identity=lambda: Identity("bob", source="test")) as store:
        [old] = store.decisions("old")
        assert (old.approver, old.identity, old.reason) == ("ada", None, "stale: changed")
        assert store.run_policy("old").started_by is None  # no policy was stored then
        decided = store.decide("old", "approved", "Bob")
        assert decided.identity == Identity("bob", source="test")
        assert store.get_run("old").status == Status.APPROVED
    db = sqlite3.connect(path)
    assert [v for (v,) in db.execute("SELECT version FROM schema_version")] == list(
        range(1, LATEST + 1)
    )
    columns = [row[1] for row in db.execute("PRAGMA table_info(decisions)")]
    assert columns[-1] == "identity"
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE decisions SET identity = NULL")  # still append-only


def test_the_policy_is_read_back_by_a_store_that_never_saw_the_workflow(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.sqlite3"
    graph = StateGraph("pay").add_node("pay", lambda s: None).set_entry_point("pay")
    graph.add_interrupt_before("pay", approvers={"bob", "group:finance"}, separate_duties=True)
    with SqliteCheckpointer(path) as store:
        run = graph.compile(store, identity=lambda: Identity("ada", ["ops"], "test")).start({})
        run.run()
    with SqliteCheckpointer(path, identity=lambda: Identity("eve", source="test")) as fresh:
        policy = fresh.run_policy(run.run_id)
        assert policy.started_by == Identity("ada", ["ops"], "test")
        assert policy.interrupts["before:pay"].describe() == (
            "approvers bob, group:finance; separate duties"
        )
        with pytest.raises(NotAuthorized):
            fresh.decide(run.run_id, "approved", "bob")  # eve, whatever she types
        assert fresh.events(run.run_id)[0].payload["started_by"] == "ada"


def test_the_policy_is_checked_while_the_decision_holds_the_write_lock(tmp_path: Path) -> None:
    """Nothing can decide (or move) the run between the check and the update: while the
    policy runs, another connection cannot even begin a write."""
    path = tmp_path / "lock.sqlite3"
    seen: list[str] = []

    def policy(identity: Identity, run: object) -> bool:
        with SqliteCheckpointer(path, timeout=0.05) as other:
            try:
                other.decide(run_id, "rejected", "sneaky", identity=Identity("eve"))
            except StoreError as exc:
                seen.append(str(exc))
        return True

    graph = StateGraph("pay").add_node("pay", lambda s: None).set_entry_point("pay")
    graph.add_interrupt_before("pay", approvers=policy)
    with SqliteCheckpointer(path) as store:
        run = graph.compile(store, identity=lambda: Identity("bob")).start({})
        run_id = run.run_id
        run.run()
        assert run.approve(by="bob").accepted
        assert run.status == Status.APPROVED
        assert [d.approver for d in store.decisions(run_id)] == ["bob"]
    assert len(seen) == 1
    assert "database is locked" in seen[0]
