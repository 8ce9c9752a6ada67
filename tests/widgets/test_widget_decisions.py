"""Approve and Reject through the checkpointer: once, bound to what was shown, shared."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from widget_support import Frontend, run_async, two_gate_workflow, until

from agentnb import SqliteCheckpointer
from agentnb.examples import build_refund_workflow


def with_paused_refund(
    store: SqliteCheckpointer, payments: list[Any], scenario: Callable[[Frontend], Awaitable[None]]
) -> Frontend:
    """Pause a refund for approval, open a view on it inside a running loop, play ``scenario``."""
    run = build_refund_workflow(store, payments).start({"requested": 1000})
    run.step()

    async def main() -> Frontend:
        fe = Frontend(run)  # made inside the loop, as in a kernel: it continues runs there
        try:
            fe.hello()
            await scenario(fe)
        finally:
            fe.close()
        return fe

    return run_async(main)


def test_double_approve_decides_once_pays_once_and_shows_the_refusal(
    store: SqliteCheckpointer,
) -> None:
    payments: list[Any] = []

    async def scenario(fe: Frontend) -> None:
        digest = fe.view.pending["digest"]
        for _ in range(2):  # a double click: two messages before any reply
            fe.click("decide", decision="approved", by="ada", comment="ok", digest=digest)
        await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        await until(lambda: "Refused" in fe.view.error, what="the refusal")

    fe = with_paused_refund(store, payments, scenario)
    decisions = fe.view.run.decisions()
    assert [d.accepted for d in decisions] == [True, False]
    assert decisions[1].reason == "not pending: approved"
    assert "is not pending approval" in fe.view.error
    assert fe.view.decided["by"] == "ada"
    assert payments == [1000]


def test_reject_ends_the_run_and_the_node_never_runs(store: SqliteCheckpointer) -> None:
    payments: list[Any] = []

    async def scenario(fe: Frontend) -> None:
        digest = fe.view.pending["digest"]
        fe.click("decide", decision="rejected", by="bo", comment="too much", digest=digest)
        await until(lambda: fe.view.status == "rejected")

    fe = with_paused_refund(store, payments, scenario)
    decided = fe.view.decided
    assert (decided["decision"], decided["by"], decided["comment"]) == (
        "rejected",
        "bo",
        "too much",
    )
    assert fe.view.overlay["rejected"] == "human_approval"
    assert fe.view.pending == {}
    assert payments == []


def test_a_stale_view_cannot_approve_a_state_it_did_not_show(store: SqliteCheckpointer) -> None:
    run = two_gate_workflow(store).start({})
    run.step()

    shown_digest: list[str] = []

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            shown = fe.view.pending["digest"]
            shown_digest.append(shown)
            # Elsewhere, someone approves the first gate and the run pauses at the second.
            await asyncio.to_thread(lambda: (run.approve(by="other"), run.run()))
            fe.click("decide", decision="approved", by="ada", digest=shown)
            await until(lambda: "Refused" in fe.view.error, what="the refusal")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert "changed since it was shown" in fe.view.error
    last = run.decisions()[-1]
    assert (last.accepted, last.digest_shown) == (False, shown_digest[0])
    assert last.reason == "stale: the pending state changed"
    assert (run.status, run.node) == ("pending", "c")


def test_an_invalid_decision_is_refused_before_storage(store: SqliteCheckpointer) -> None:
    async def scenario(fe: Frontend) -> None:
        fe.click("decide", decision="approved", by="  ", digest=fe.view.pending["digest"])
        await until(lambda: fe.view.error, what="the refusal")
        fe.click("decide", decision="maybe", by="ada")
        await until(lambda: "not a decision" in fe.view.error)

    fe = with_paused_refund(store, [], scenario)
    assert fe.view.run.status == "pending"
    assert fe.view.run.decisions() == []


@pytest.mark.slow
def test_a_cli_approval_from_another_process_shows_and_this_kernel_continues(
    store: SqliteCheckpointer, db_path: Path
) -> None:
    payments: list[Any] = []

    async def scenario(fe: Frontend) -> None:
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "agentnb.cli", "approve", fe.view.run_id,
            "--db", str(db_path), "--as", "cli-user", "--comment", "from the shell",
            stdout=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert await cli.wait() == 0
        await until(lambda: fe.view.decided.get("by") == "cli-user", what="the decision")
        await until(lambda: fe.view.status == "completed", what="the continued run")

    fe = with_paused_refund(store, payments, scenario)
    assert fe.view.decided["comment"] == "from the shell"
    assert payments == [1000]
    assert fe.view.state["status"] == "success"


def test_an_approval_made_by_code_here_is_left_to_that_code(store: SqliteCheckpointer) -> None:
    async def scenario(fe: Frontend) -> None:
        fe.view.run.approve(by="code")
        await until(lambda: fe.view.decided.get("by") == "code")
        # The relay has judged the approval; one more refresh proves nothing was started.
        await until(lambda: fe.view._controls.continued_seq > 0)
        seen = fe.view.refreshes
        fe.view._relay.wake()
        await until(lambda: fe.view.refreshes > seen)
        assert fe.view._controls.task is None

    fe = with_paused_refund(store, [], scenario)
    assert fe.view.run.status == "approved"


def test_a_refusal_goes_once_the_next_decision_from_the_panel_succeeds(
    store: SqliteCheckpointer,
) -> None:
    async def scenario(fe: Frontend) -> None:
        digest = fe.view.pending["digest"]
        fe.click("decide", decision="approved", by="", digest=digest)
        await until(lambda: "approver's name" in fe.view.error, what="the refusal")
        fe.click("decide", decision="approved", by="ada", digest=digest)
        await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        await until(lambda: fe.view.notice == "Approved by ada.", what="the notice")

    fe = with_paused_refund(store, [], scenario)
    assert fe.view.error == ""
    assert fe.view.decided["by"] == "ada"


def test_a_refusal_goes_once_a_decision_made_elsewhere_ends_the_pause(
    store: SqliteCheckpointer,
) -> None:
    async def scenario(fe: Frontend) -> None:
        fe.click("decide", decision="approved", by=" ", digest=fe.view.pending["digest"])
        await until(lambda: "approver's name" in fe.view.error, what="the refusal")
        # Another kernel (its own store handle) approves: this view only reads the news.
        with SqliteCheckpointer(store.path) as other:
            await asyncio.to_thread(other.decide, fe.view.run_id, "approved", "cli-user")
        await until(lambda: fe.view.decided.get("by") == "cli-user", what="the decision")
        await until(lambda: fe.view.error == "", what="the moot refusal to go")

    with_paused_refund(store, [], scenario)


def test_a_refused_decision_that_came_after_one_that_went_through_stays_shown(
    store: SqliteCheckpointer,
) -> None:
    async def scenario(fe: Frontend) -> None:
        digest = fe.view.pending["digest"]
        fe.click("decide", decision="approved", by="ada", digest=digest)
        await until(lambda: fe.view.decided.get("by") == "ada", what="the decision")
        fe.click("decide", decision="approved", by="tom", digest=digest)
        await until(lambda: "not pending approval" in fe.view.error, what="the refusal")
        await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        seen = fe.view.refreshes
        fe.view._relay.wake()
        await until(lambda: fe.view.refreshes > seen)

    fe = with_paused_refund(store, [], scenario)
    assert "not pending approval" in fe.view.error
