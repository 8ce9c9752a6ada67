"""Migration 0008: full-state checkpoints become snapshots and deltas, without loss."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from agentnb import SqliteCheckpointer
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


def old_file(path: Path, runs: dict[str, list[str]]) -> None:
    """A file as agentnb 0.1.0 wrote it (the release fixture) plus ``runs``: for each, its
    checkpoints' state texts, step 0 first, stored whole as that release stored them."""
    shutil.copy(RELEASE, path)
    db = sqlite3.connect(path)
    for run_id, texts in runs.items():
        db.execute(
            "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, "
            "status_at, fence) VALUES (?, 'loop', 's', 'completed', 100, 1.0, 1.0, 0)",
            (run_id,),
        )
        for step, text in enumerate(texts):
            event = [step + 1, step, "state_update", "agent", {}, 1.0]
            db.execute(
                "INSERT INTO entries (run_id, seq, step, node, state, events, at) "
                "VALUES (?, ?, ?, 'agent', ?, ?, 1.0)",
                (run_id, step + 1, step, text, json.dumps([event])),
            )
    db.commit()
    db.close()


def loop_states(steps: int) -> list[dict[str, object]]:
    return [{"n": i, "messages": [f"m{j}" for j in range(i)]} for i in range(steps + 1)]


def test_a_run_whose_rebuild_would_differ_keeps_every_checkpoint_whole(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    states = loop_states(6)
    # "odd": JSON with spaces, text no rebuild gives back byte for byte.
    old_file(path, {"odd": [json.dumps(s) for s in states], "ok": [dumps(s) for s in states]})
    before = stored_states(path)
    with SqliteCheckpointer(path) as store:
        for step in range(7):
            assert store.checkpoint("odd", step).state == states[step]
            assert dumps(store.checkpoint("ok", step).state) == before[("ok", step)]
    after = stored_states(path)
    assert {k: v for k, v in after.items() if k[0] == "odd"} == {
        k: v for k, v in before.items() if k[0] == "odd"
    }
    assert kinds(path, "odd") == [SNAPSHOT] * 7  # left as they were: whole states
    assert kinds(path, "ok") == [SNAPSHOT] + [DELTA] * 6


def test_a_step_that_drops_a_key_stays_a_snapshot_in_the_converted_chain(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    # As a custom reducer could have: step 2 has no "tmp" any more.
    texts = ['{"x":0}', '{"x":1,"tmp":true}', '{"x":2}', '{"x":3}']
    old_file(path, {"r": texts})
    with SqliteCheckpointer(path) as store:
        assert [dumps(cp.state) for cp in store.checkpoints("r")] == texts
        assert dumps(store.checkpoint("r", 3).state) == texts[3]
    assert kinds(path, "r") == [SNAPSHOT, DELTA, SNAPSHOT, DELTA]


def test_a_step_saved_twice_keeps_its_latest_row_whole_as_an_edit_is_stored(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    old_file(path, {"e": ['{"n":0}', '{"n":1}', '{"n":2}']})
    db = sqlite3.connect(path)  # an approval with edits saved step 2 again
    db.execute(
        "INSERT INTO entries (run_id, seq, step, node, state, events, at) "
        "VALUES ('e', 9, 2, 'agent', '{\"n\":20}', '[]', 2.0)"
    )
    db.commit()
    db.close()
    with SqliteCheckpointer(path) as store:
        assert [cp.state for cp in store.checkpoints("e")] == [{"n": 0}, {"n": 1}, {"n": 20}]
        assert store.checkpoint("e", 2).state == {"n": 20}
    assert kinds(path, "e") == [SNAPSHOT, DELTA, SNAPSHOT, SNAPSHOT]
