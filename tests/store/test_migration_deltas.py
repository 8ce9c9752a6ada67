"""Migration 0008: full-state checkpoints become snapshots and deltas, without loss."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from agentnb import END, SqliteCheckpointer, StateGraph
from agentnb._json import dumps
from agentnb.store.chains import DELTA, SNAPSHOT
from agentnb.store.migrate import LATEST

RELEASE = Path(__file__).with_name("data") / "release-0.1.0.db"
"""Written by agentnb 0.1.0 (schema version 4): full-state checkpoints only."""


def stored_states(path: Path) -> dict[tuple[str, int], str]:
    """Each run's latest checkpoint text per step, read from the file with plain SQL."""
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT run_id, step, state FROM entries WHERE state IS NOT NULL ORDER BY seq"
    ).fetchall()
    db.close()
    return {(run_id, step): state for run_id, step, state in rows}


def kinds(path: Path, run_id: str) -> list[str | None]:
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT kind FROM entries WHERE run_id = ? AND state IS NOT NULL ORDER BY seq", (run_id,)
    ).fetchall()
    db.close()
    return [kind for (kind,) in rows]


def test_the_release_file_keeps_every_steps_state_through_the_conversion(tmp_path: Path) -> None:
    path = tmp_path / "release.db"
    shutil.copy(RELEASE, path)
    before = stored_states(path)
    with SqliteCheckpointer(path) as store:
        for (run_id, step), text in before.items():
            assert dumps(store.checkpoint(run_id, step).state) == text
        for run_id in {run_id for run_id, _ in before}:
            history = [cp.state for cp in store.checkpoints(run_id)]
            assert [dumps(s) for s in history] == [t for (r, _), t in before.items() if r == run_id]
    assert kinds(path, "loop-completed") == [SNAPSHOT] + [DELTA] * 5
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (LATEST,)


def loop_workflow(store: SqliteCheckpointer, steps: int) -> StateGraph:
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"n": s["n"] + 1, "messages": [f"m{s['n']}"]})
    g.set_entry_point("agent")
    g.add_conditional_edge("agent", lambda s: "agent" if s["n"] < steps else END, ["agent", END])
    return g


def downgrade_to_full_states(path: Path, spaced: frozenset[str] = frozenset()) -> None:
    """Rewrite a current file as 0007 wrote it: every checkpoint the whole state, no kinds.

    The runs in ``spaced`` get JSON with spaces, text no rebuild gives back byte for byte.
    """
    with SqliteCheckpointer(path) as store:
        full = {
            (run.run_id, cp.step): cp.state
            for run in store.list_runs()
            for cp in store.checkpoints(run.run_id)
        }
    db = sqlite3.connect(path)
    for (run_id, step), state in full.items():
        text = json.dumps(state) if run_id in spaced else dumps(state)
        db.execute(
            "UPDATE entries SET state = ?, kind = NULL WHERE run_id = ? AND step = ? "
            "AND state IS NOT NULL",
            (text, run_id, step),
        )
    db.execute("DROP INDEX entries_chain")
    db.execute("ALTER TABLE entries DROP COLUMN kind")
    db.execute("DELETE FROM schema_version WHERE version >= 8")
    db.commit()
    db.close()


def test_a_run_whose_rebuild_would_differ_keeps_every_checkpoint_whole(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SqliteCheckpointer(path) as store:
        loop_workflow(store, 6).compile(store).start({"n": 0, "messages": []}, run_id="odd").run()
        loop_workflow(store, 6).compile(store).start({"n": 0, "messages": []}, run_id="ok").run()
    downgrade_to_full_states(path, spaced=frozenset({"odd"}))
    before = stored_states(path)
    with SqliteCheckpointer(path) as store:
        for step in range(7):
            assert store.checkpoint("odd", step).state == json.loads(before[("odd", step)])
            assert dumps(store.checkpoint("ok", step).state) == before[("ok", step)]
    after = stored_states(path)
    assert {k: v for k, v in after.items() if k[0] == "odd"} == {
        k: v for k, v in before.items() if k[0] == "odd"
    }
    assert kinds(path, "odd") == [None] * 7  # left as they were: whole states
    assert kinds(path, "ok") == [SNAPSHOT] + [DELTA] * 6


def test_a_step_that_drops_a_key_stays_a_snapshot_in_the_converted_chain(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    g = StateGraph("drop")
    g.add_node("a", lambda s: {"x": 1, "tmp": True})
    g.add_node("b", lambda s: {"x": 2})
    g.add_node("c", lambda s: {"x": 3})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    with SqliteCheckpointer(path) as store:
        g.compile(store).start({"x": 0}, run_id="r").run()
    downgrade_to_full_states(path)
    db = sqlite3.connect(path)  # as a custom reducer could have: step 2 has no "tmp"
    db.execute("UPDATE entries SET state = '{\"x\":2}' WHERE run_id = 'r' AND step = 2")
    db.commit()
    db.close()
    before = stored_states(path)
    with SqliteCheckpointer(path) as store:
        assert [dumps(cp.state) for cp in store.checkpoints("r")] == list(before.values())
        assert dumps(store.checkpoint("r", 3).state) == before[("r", 3)]
    assert kinds(path, "r") == [SNAPSHOT, DELTA, SNAPSHOT, DELTA]
