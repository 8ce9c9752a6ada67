"""The relay reads a run (or a machine instance) and its log in two queries; whatever commits
between them must not make the panel show a log ahead of its status.

Found in the browser suite: a Step's commit landed between the relay's read of the run's row
(still ``running``) and its read of the events (already ``interrupted``), so the page showed
the pause in the log while the badge said ``running`` and Step was still enabled; a second
press then met "Nothing to step: the run is pending" and produced no events. Each test here
forces that interleaving: the store commits right after the row is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from machine_support import MachineFrontend, traffic_light
from widget_support import Frontend

from agentnb import SqliteCheckpointer
from agentnb.examples import build_refund_workflow


class CommitsAfterRead:
    """A store whose ``read`` call runs ``commit()`` once, after reading and before returning."""

    def __init__(self, store: Any, read: str, commit: Callable[[], object]) -> None:
        self._store, self._read, self._commit = store, read, commit

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name != self._read:
            return found

        def read_then_commit(*args: Any, **kwargs: Any) -> Any:
            value = found(*args, **kwargs)
            commit, self._commit = self._commit, lambda: None
            commit()
            return value

        return read_then_commit


def test_a_step_committed_during_a_refresh_waits_for_the_status_that_goes_with_it(
    store: SqliteCheckpointer,
) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000})
    fe = Frontend(run)
    try:
        fe.view._relay.stop()  # this test plays the relay thread, one refresh at a time
        fe.view._store = CommitsAfterRead(store, "get_run", run.step)
        fe.view._refresh()
        sent = [r["type"] for m in fe.customs("events") for r in m["events"]]
        assert "interrupted" not in sent  # the row read said "running": not yet
        assert fe.view.status == "running"
        assert fe.view.pending == {}

        fe.view._refresh()
        sent = [r["type"] for m in fe.customs("events") for r in m["events"]]
        assert sent == ["node_start", "state_update", "interrupted"]
        assert fe.view.status == "pending"
        assert fe.view.pending["node"] == "human_approval"
        assert fe.view.state["amount"] == 1000
    finally:
        fe.close()


def test_a_transition_committed_during_a_refresh_waits_for_the_state_that_goes_with_it(
    store: SqliteCheckpointer,
) -> None:
    light = traffic_light().start("crossing-1", store=store)
    fe = MachineFrontend(light)
    try:
        fe.view._relay.stop()
        light.send("timer")  # RED -> GREEN, seq 1: the next refresh has news to read
        fe.view._store = CommitsAfterRead(light.store, "load", lambda: light.send("timer"))
        fe.view._refresh()
        sent = [r["seq"] for m in fe.customs("records") for r in m["records"]]
        assert sent == [1]  # the row read said GREEN at seq 1: the move to YELLOW comes next
        assert fe.view.state == "GREEN"
        assert fe.view.overlay["current"] == "GREEN"

        fe.view._refresh()
        sent = [r["seq"] for m in fe.customs("records") for r in m["records"]]
        assert sent == [1, 2]  # each record once, with the state it led to
        assert fe.view.state == "YELLOW"
        assert fe.view.overlay["current"] == "YELLOW"
    finally:
        fe.close()
