"""Every exercise's checker, graded on a correct and on a wrong solution.

A checker that passed a wrong solution (or an empty store) would grade nothing; one that
failed a correct solution would fail students who did the work. Both ways, for every
registered exercise: ``test_every_exercise_is_tested_both_ways`` keeps the table complete.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer
from agentnb.teach import exercises, grade
from tests.teach import chart_scenarios as c
from tests.teach import langgraph_scenarios as g
from tests.teach import parallel_scenarios as p
from tests.teach import scale_scenarios as w
from tests.teach import scenarios as s

P = functools.partial

# id -> (a correct solution, a wrong one)
CASES: dict[str, tuple[s.Scenario, s.Scenario]] = {
    "01.1": (s.reject_big, s.approve_big),
    "01.2": (s.with_notify, P(s.with_notify, replace=True)),
    "01.3": (s.huge_outcome, P(s.huge_outcome, declared=True)),
    "02.1": (
        s.predict_history({"step": 2, "next": "refund"}),
        s.predict_history({"step": 1, "next": "human_approval"}),
    ),
    "02.2": (s.two_signoffs, P(s.two_signoffs, made_up=True)),
    "02.3": (s.reject_2000, P(s.reject_2000, comment=None)),
    "03.1": (P(s.maintenance, everywhere=True), P(s.maintenance, everywhere=False)),
    "03.2": (P(s.final_state, final=True), P(s.final_state, final=False)),
    "03.3": (
        s.clicks(["timer", "timer", "emergency", "timer"], "GREEN"),
        s.clicks(["timer", "timer", "emergency", "timer"], "YELLOW"),
    ),
    "03.4": (P(s.event_ids, with_ids=True, answer=2), P(s.event_ids, with_ids=False, answer=2)),
    "04.1": (
        P(s.retried_timeout, answer={"timeout": 3, "retry": 2}),
        P(s.retried_timeout, answer={"timeout": 2, "retry": 2}),
    ),
    "04.2": (P(s.breaker, failures=3), P(s.breaker, failures=2)),
    "04.3": (
        P(s.replayed_payment, run_ids=["refund-1", "refund-2"]),
        P(s.replayed_payment, run_ids=["refund-1"]),
    ),
    "05.1": (
        s.failed_report({"customer": "bea", "attempt": 2}),
        s.failed_report({"customer": "bea", "attempt": 1}),
    ),
    "05.2": (P(s.timed_out_reply, timeout_reply=True), P(s.timed_out_reply, timeout_reply=False)),
    "05.3": (P(s.decided_refunds, decide_all=True), P(s.decided_refunds, decide_all=False)),
    "06.1": (P(p.research, joined=True), P(p.research, joined=False)),
    "06.2": (
        P(p.word_counts, reducer=operator.add),
        P(p.word_counts, reducer=lambda old, new: new),
    ),
    "06.3": (P(p.booking, form=True), P(p.booking, form=False)),
    "06.4": (
        p.predict([["plan"], ["papers", "web"], ["cite"], ["write"]]),
        p.predict([["plan"], ["papers", "web"], ["cite", "web"], ["write"]]),
    ),
    "07.1": (
        P(c.light_region, guard="In('opened') or In('cooking')"),
        P(c.light_region, guard="In('opened')"),
    ),
    "07.2": (P(c.history, deep=True), P(c.history, deep=False)),
    "07.3": (P(c.delayed, after=True, answer=30), P(c.delayed, after=True, answer=45)),
    "07.4": (
        c.clicks({"oven": "heating", "timers": 1}),
        c.clicks({"oven": "defrosting", "timers": 1}),
    ),
    "08.1": (P(w.batch, by_workers=True), P(w.batch, by_workers=False)),
    "08.2": (P(w.rejection, comment="over the limit"), P(w.rejection, comment=None)),
    "08.3": (P(w.handover, stopped=True), P(w.handover, stopped=False)),
    "09.1": (P(s.agent, stop_after=100), P(s.agent, stop_after=3)),
    "09.2": (s.reject_big, s.approve_big),
    "09.3": (
        P(s.replayed_payment, run_ids=["agent-1"]),
        P(s.agent, stop_after=3),
    ),
    "10.1": (P(s.capstone, with_rejection=True), P(s.capstone, with_rejection=False)),
    "10.2": (P(g.answer_then, decision="rejected"), P(g.answer_then, decision="approved")),
    "10.3": (P(g.fork, amount=0), P(g.fork, amount=None)),
    "10.4": (P(g.subgraph, inner="node"), P(g.subgraph, inner="called")),
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteCheckpointer]:
    with SqliteCheckpointer(tmp_path / "submission.sqlite3") as store:
        yield store


def test_every_exercise_is_tested_both_ways() -> None:
    assert sorted(CASES) == [e.id for e in exercises()]


@pytest.mark.parametrize("exercise_id", sorted(CASES))
def test_a_correct_solution_passes(exercise_id: str, store: SqliteCheckpointer) -> None:
    correct, _ = CASES[exercise_id]
    result = grade(exercise_id, **correct(store))
    assert result.passed, str(result)
    assert str(result).startswith(f"✓ {exercise_id} ")
    assert result.hint is None


@pytest.mark.parametrize("exercise_id", sorted(CASES))
def test_a_wrong_solution_fails_with_a_hint(exercise_id: str, store: SqliteCheckpointer) -> None:
    _, wrong = CASES[exercise_id]
    result = grade(exercise_id, **wrong(store))
    assert not result.passed, str(result)
    assert str(result).startswith(f"✗ {exercise_id} ")
    assert result.hint
    assert "\n  hint: " in str(result)


@pytest.mark.parametrize("exercise_id", sorted(CASES))
def test_an_empty_store_passes_no_exercise(exercise_id: str, store: SqliteCheckpointer) -> None:
    assert not grade(exercise_id, store=store)


def test_a_stale_approval_like_the_demo_does_not_pass_the_stale_rejection_exercise(
    store: SqliteCheckpointer,
) -> None:
    result = grade("02.2", **s.two_signoffs(store, decision="approved"))
    assert not result.passed
    assert "only stale approvals" in result.observed


def test_a_defrost_ended_by_hand_is_not_a_delayed_transition(store: SqliteCheckpointer) -> None:
    result = grade("07.3", **c.delayed(store, after=False, answer=30))
    assert not result.passed
    assert "by a timer of its own" in result.observed


def test_a_wrong_count_of_pending_timers_fails_the_click_prediction(
    store: SqliteCheckpointer,
) -> None:
    result = grade("07.4", **c.clicks({"oven": "heating", "timers": 0})(store))
    assert not result.passed
    assert "1 timer(s) are pending, you predicted 0" in result.observed


def test_a_map_reduce_without_a_reducer_fails_on_its_conflicting_update(
    store: SqliteCheckpointer,
) -> None:
    result = grade("06.2", **p.word_counts(store, reducer=None))
    assert not result.passed
    assert "failed (ConflictingUpdate)" in result.observed


def test_a_form_answered_but_not_run_on_is_not_done(store: SqliteCheckpointer) -> None:
    result = grade("06.3", **p.booking(store, form=True, run_on=False))
    assert not result.passed
    assert "answered" in result.observed
    assert "pending" in result.observed or "approved" in result.observed


def test_a_prediction_of_a_run_not_stepped_to_its_end_fails(store: SqliteCheckpointer) -> None:
    kwargs = p.outline(store, answer=[["plan"], ["papers", "web"], ["cite"], ["write"]], steps=2)
    result = grade("06.4", **kwargs)
    assert not result.passed
    assert "no completed run" in result.observed


def test_a_map_reduce_whose_tasks_do_not_all_count_fails(store: SqliteCheckpointer) -> None:
    result = grade("06.2", **p.word_counts(store, reducer=operator.add, skip=3))
    assert not result.passed
    assert "sent 3 tasks, but only 2 of them returned a count" in result.observed


@pytest.mark.slow
def test_a_run_that_changed_workers_only_while_paused_is_not_a_handover(
    store: SqliteCheckpointer,
) -> None:
    # Notebook 08's refund-3 is planned by one worker and, once approved, refunded by
    # whichever claims it: different processes, but no worker was stopped mid-run.
    assert not grade("08.3", **w.approved_elsewhere(store))
