"""Decisions, refusals and effect-ledger writes commit at synchronous=FULL; steps at the
store's level. A probe on the connection reads ``PRAGMA synchronous`` at every COMMIT (and
at a write that is its own transaction)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentnb import ApprovalNotPending, Identity, NotAuthorized, SqliteCheckpointer, Status
from agentnb.examples import build_refund_graph

LEVELS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


class CommitProbe:
    """Stands in for the store's connection; at each COMMIT it asks SQLite for the level
    in force and notes what the transaction wrote."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.commits: list[tuple[str, str]] = []
        self._writes: list[str] = []
        self.autocommitted: list[tuple[str, str]] = []

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        if sql.startswith("BEGIN"):
            self._writes = []
        elif sql == "COMMIT":
            (level,) = self.db.execute("PRAGMA synchronous").fetchone()
            self.commits.append((self._kind(), LEVELS[level]))
        elif not self.db.in_transaction and sql.startswith(("INSERT", "UPDATE", "DELETE")):
            # A statement that is its own transaction (a running step's entry) commits
            # as it ends, at the level in force now.
            (level,) = self.db.execute("PRAGMA synchronous").fetchone()
            self._writes = [sql]
            self.commits.append((self._kind(), LEVELS[level]))
            self.autocommitted.append(self.commits[-1])
        else:
            self._writes.append(sql)
        return self.db.execute(sql, params)

    def _kind(self) -> str:
        text = " ".join(self._writes)
        if "INTO decisions" in text:
            return "decision"
        if "INTO effects" in text:
            return "effect"
        return "step"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def probed(path: Path, level: str) -> tuple[SqliteCheckpointer, CommitProbe]:
    store = SqliteCheckpointer(path, synchronous=level, identity=lambda: Identity("ada"))
    probe = CommitProbe(store._db)
    store._db = probe  # type: ignore[assignment]
    return store, probe


def scenario(store: SqliteCheckpointer) -> list[Any]:
    """Two pending refunds: one approved (then paid: an effect), refusals, one rejected."""
    paid: list[Any] = []
    graph = build_refund_graph(paid)
    wf = graph.compile(store)
    run = wf.start({"requested": 900})
    run.run()
    run.approve(by="ada")
    with pytest.raises(ApprovalNotPending):
        run.approve(by="ada")  # a refused attempt: audited, so committed durably too
    run.run()
    assert run.status == Status.COMPLETED
    assert paid == [900]

    strict = build_refund_graph(paid)
    strict.add_interrupt_after("planner", approvers={"group:finance"})
    other = strict.compile(store).start({"requested": 800})
    other.run()
    with pytest.raises(NotAuthorized):
        other.reject(by="ada")
    return paid


@pytest.mark.parametrize(
    ("level", "durable"),
    [("OFF", "FULL"), ("NORMAL", "FULL"), ("FULL", "FULL"), ("EXTRA", "EXTRA")],
)
def test_decisions_refusals_and_effects_commit_at_full_whatever_the_step_level(
    tmp_path: Path, level: str, durable: str
) -> None:
    store, probe = probed(tmp_path / "d.sqlite3", level)
    with store:
        scenario(store)
        kinds = {kind for kind, _ in probe.commits}
        assert kinds == {"step", "decision", "effect"}
        assert [c for c in probe.commits if c[0] == "decision"] == [("decision", durable)] * 3
        assert [c for c in probe.commits if c[0] == "effect"] == [("effect", durable)]
        assert {lvl for kind, lvl in probe.commits if kind == "step"} == {level}
        assert ("step", level) in probe.autocommitted  # a running step's one statement
        # ... and the connection is back at the store's level for the next step.
        assert LEVELS[store._db.execute("PRAGMA synchronous").fetchone()[0]] == level


def test_a_durable_write_that_fails_still_restores_the_step_level(tmp_path: Path) -> None:
    store, probe = probed(tmp_path / "d.sqlite3", "NORMAL")
    seen: list[int] = []

    def failing_write() -> None:
        with store._write(durable=True) as db:
            seen.append(db.execute("PRAGMA synchronous").fetchone()[0])
            db.execute("INSERT INTO schema_version VALUES (1, 0)")  # duplicate: rolls back

    with pytest.raises(sqlite3.IntegrityError):
        failing_write()
    assert seen == [2]
    assert probe.commits == []
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 1
    store.close()
