"""Migration 0011: the chains of a file written before skips existed (schema version 10)
are cut with skips, and every step's state comes back as it was."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from agentnb import SqliteCheckpointer
from agentnb.store.chains import DELTA, SKIP, SNAPSHOT
from agentnb.store.migrate import LATEST

DATA = Path(__file__).with_name("data")
WRITTEN = DATA / "chains-0010.db"
"""Written by agentnb at e864433 (schema version 10): see make_chain_db.py."""
sys.path.insert(0, str(DATA))
from make_chain_db import loop  # noqa: E402  (the workflow that wrote the file)


def loop_state(step: int) -> dict[str, Any]:
    return {"count": step, "messages": [f"m{i}" for i in range(step)]}


def expected(run_id: str, step: int) -> dict[str, Any]:
    """The state the file's run had after ``step`` nodes (make_chain_db.py's runs)."""
    if run_id == "edited" and step >= 105:
        state = {"count": 1000, "messages": [f"m{i}" for i in range(105)]}
        if step == 107:
            state = {"count": 1001, "messages": [*state["messages"], "m1000"]}
        return state
    return loop_state(step)


FIRST = {"long": 0, "edited": 0, "fork": 120, "open": 0}
LAST = {"long": 230, "edited": 107, "fork": 230, "open": 150}


def kinds(path: Path, run_id: str) -> dict[int, str | None]:
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT step, kind FROM entries WHERE run_id = ? AND state IS NOT NULL ORDER BY seq",
        (run_id,),
    ).fetchall()
    db.close()
    return dict(rows)


def test_a_file_written_before_skips_keeps_every_steps_state_and_is_cut_with_skips(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chains.db"
    shutil.copy(WRITTEN, path)
    assert max(kinds(path, "long")) == 230
    assert SKIP not in kinds(path, "long").values()
    with SqliteCheckpointer(path) as store:
        for run_id, first in FIRST.items():
            steps = range(first, LAST[run_id] + 1)
            for step in steps:
                assert store.checkpoint(run_id, step).state == expected(run_id, step)
            assert [cp.state for cp in store.checkpoints(run_id)] == [
                expected(run_id, step) for step in steps
            ]
    # Cut as a writer cuts a chain now: an anchor every 100 deltas, a skip for a growing
    # state; the step a decision's edit saved again stays whole.
    long = kinds(path, "long")
    assert {step: kind for step, kind in long.items() if kind != DELTA} == {
        0: SNAPSHOT,
        100: SKIP,
        200: SKIP,
    }
    assert kinds(path, "fork")[120] == SNAPSHOT
    assert kinds(path, "fork")[220] == SKIP
    assert kinds(path, "edited")[105] == SNAPSHOT
    db = sqlite3.connect(path)
    assert db.execute("SELECT max(version) FROM schema_version").fetchone() == (LATEST,)


def test_a_run_left_running_in_the_file_goes_on_after_the_migration(tmp_path: Path) -> None:
    path = tmp_path / "chains.db"
    shutil.copy(WRITTEN, path)
    with SqliteCheckpointer(path) as store:
        run = loop(store, 230).attach("open")  # type: ignore[attr-defined]
        assert run.state == loop_state(150)
        run.run()
        assert run.status == "completed"
        for step in range(231):
            assert store.checkpoint("open", step).state == loop_state(step)
