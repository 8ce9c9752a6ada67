"""A wrong answer's ✗ teaches: it says what was recorded beside what was predicted.

One case per kind of wrong answer, each checked against the whole sentence a student reads,
so a message that only says "differs" (or garbles its list) fails here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer
from agentnb.teach import grade
from tests.teach import chart_scenarios as c
from tests.teach import parallel_scenarios as p
from tests.teach import scenarios as s

P = functools.partial
RAN = "run 'outline' ran {plan} → {papers, web} → {cite} → {write}: "

# (exercise, a wrong answer of one kind, what the ✗ must say)
WRONG = [
    (
        "06.1",
        P(p.research, joined=False),
        "run 'research-3': `news`, `papers`, `web` ran in one superstep, but they do not all "
        "lead to one join: `papers`, `web` lead to `write`; `news` leads nowhere (to `END`); "
        "`news` never reached the join, so `write` ran without it",
    ),
    (
        "06.4",
        p.predict([["plan"], ["papers", "web"], ["cite", "web"], ["write"]]),
        RAN + "superstep 3 ran {cite}, you predicted {cite, web}",
    ),
    (
        "06.4",
        p.predict([["plan"], ["papers", "web"], ["cite", "write"]]),
        RAN + "superstep 3 ran {cite}, you predicted {cite, write}",
    ),
    (
        "06.4",
        p.predict([["plan"], ["papers", "web"]]),
        RAN + "you predicted 2 supersteps; the run went on with {cite} → {write}",
    ),
    (
        "06.4",
        p.predict([["plan"], ["papers", "web"], ["cite"], ["write"], ["web"]]),
        RAN + "you predicted 5 supersteps; superstep 5 on ({web}) never ran",
    ),
    (
        "07.3",
        P(c.delayed, after=True, answer=45),
        "instance 'timed' went defrosting → heating on its timer, and `beep` is due at 30, "
        "not at 45 as you predicted",
    ),
    (
        "07.4",
        c.clicks({"oven": "defrosting", "timers": 1}),
        "instance 'panel' recorded the clicks: the oven ended in `heating`, you predicted "
        "`defrosting`; the count of pending timers (1) is right.",
    ),
    (
        "07.4",
        c.clicks({"oven": "heating", "timers": 0}),
        "instance 'panel' recorded the clicks: the oven's state `heating` is right; 1 "
        "timer(s) are pending, you predicted 0.",
    ),
    (
        "07.4",
        c.clicks({"oven": "idle", "timers": 3}),
        "instance 'panel' recorded the clicks: the oven ended in `heating`, you predicted "
        "`idle`; 1 timer(s) are pending, you predicted 3.",
    ),
    (
        "02.1",
        s.predict_history({"step": 1, "next": "human_approval"}),
        "in run 'refund-1000', `approval_recorded` first appears at step 2, with `refund` "
        "next; you predicted step 1, next `human_approval`",
    ),
    (
        "03.3",
        s.clicks(["timer", "timer", "emergency", "timer"], "YELLOW"),
        "instance 'panel' went RED → GREEN → YELLOW → RED → GREEN: it ended in 'GREEN', "
        "you predicted 'YELLOW'",
    ),
    (
        "04.1",
        P(s.retried_timeout, answer={"timeout": 2, "retry": 2}),
        "run '<id>' recorded 3 timeout(s) and 2 retry(ies); you predicted 2 and 2",
    ),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteCheckpointer]:
    with SqliteCheckpointer(tmp_path / "submission.sqlite3") as store:
        yield store


@pytest.mark.parametrize(("exercise_id", "wrong", "said"), WRONG)
def test_a_wrong_answer_is_told_what_was_recorded(
    exercise_id: str, wrong: s.Scenario, said: str, store: SqliteCheckpointer
) -> None:
    result = grade(exercise_id, **wrong(store))
    assert not result.passed
    # A run started without a run_id has a fresh one: the sentence is what is checked.
    assert re.sub(r"run '[0-9a-f]{32}'", "run '<id>'", result.observed) == said


def test_a_failed_check_says_which_file_it_read(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(db) as store:
        p.research(store, joined=False)
        by_file = grade("06.1", db=db)
        by_store = grade("06.1", store=store)
    assert f"\n  read: {db}\n  hint: " in str(by_file)
    assert by_store.read == str(db)  # outside the working directory: the whole path
    assert grade("06.1", db=db).read == str(db)


def test_the_store_a_notebook_wrote_to_is_graded_even_after_its_file_was_deleted(
    tmp_path: Path,
) -> None:
    # What re-running notebook 09's first cell does while the exercises' store is open:
    # the file is deleted and created again under its name; the open store writes on.
    db = tmp_path / "09-exercises.sqlite3"
    with SqliteCheckpointer(db) as written:
        for old in tmp_path.glob(db.name + "*"):
            old.unlink()
        with SqliteCheckpointer(db):  # the new, empty file of the re-run cell
            p.research(written, joined=True)
            assert grade("06.1", store=written).passed
            from_file = grade("06.1", db=db)
    assert not from_file.passed
    assert "read: " + str(db) in str(from_file)


def test_a_store_whose_file_was_deleted_says_so_pass_or_fail(tmp_path: Path) -> None:
    db = tmp_path / "09-exercises.sqlite3"
    with SqliteCheckpointer(db) as written:
        assert written.file_status() is None
        p.research(written, joined=True)
        for old in tmp_path.glob(db.name + "*"):
            old.unlink()
        assert written.file_status() == "deleted"
        graded = grade("06.1", store=written)
        assert graded.passed  # the records are the student's, in the file the store has open
        assert graded.read == f"{db} (deleted since this store opened it)"
        assert graded.warning is not None
        assert f"{db} is no longer that file" in graded.warning
        assert str(graded).splitlines()[1:] == [
            f"  read: {graded.read}",
            f"  ⚠ {graded.warning}",
        ]
        with SqliteCheckpointer(db):  # created again under the name
            assert written.file_status() == "replaced"
            assert grade("06.1", store=written).read == (
                f"{db} (replaced since this store opened it)"
            )


def test_a_file_read_while_an_earlier_store_writes_to_its_deleted_twin_is_flagged(
    tmp_path: Path,
) -> None:
    # Notebook 06 after its setup cell ran again: `store` is new, but a workflow compiled
    # before still writes to the store opened first, whose file that cell deleted.
    db = tmp_path / "06-parallel.sqlite3"
    with SqliteCheckpointer(db) as earlier:
        for old in tmp_path.glob(db.name + "*"):
            old.unlink()
        with SqliteCheckpointer(db) as store:
            p.research(earlier, joined=True)
            for graded in (grade("06.1", store=store), grade("06.1", db=db)):
                assert not graded.passed
                assert graded.read == str(db)
                assert graded.warning is not None
                assert graded.warning.startswith(f"this kernel still has an earlier {db} open")
                assert f"\n  ⚠ {graded.warning}" in str(graded)
    with SqliteCheckpointer(db) as store:  # the earlier store closed: nothing to warn of
        assert grade("06.1", store=store).warning is None
