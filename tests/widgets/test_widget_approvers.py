"""The panel and approver policies: it shows the kernel's identity and, when a policy
applies, decides as that identity only (never as a typed name)."""

from __future__ import annotations

from typing import Any

from widget_support import Frontend, run_async, until

from agentnb import Identity, SqliteCheckpointer, StateGraph
from agentnb.examples import build_refund_workflow


def paused(store: SqliteCheckpointer, me: Identity, **policy: Any) -> Any:
    graph = StateGraph("pay").add_node("plan", lambda s: {"amount": 900})
    graph.add_node("pay", lambda s: {"paid": True}).add_edge("plan", "pay")
    graph.set_entry_point("plan").add_interrupt_before("pay", **policy)
    run = graph.compile(store, identity=lambda: me).start({})
    run.step()
    return run


def test_with_a_policy_the_panel_decides_as_the_kernels_identity_only(
    store: SqliteCheckpointer,
) -> None:
    bob = Identity("bob", ["finance"], "test")
    run = paused(store, bob, approvers={"group:finance"})

    async def scenario(fe: Frontend) -> None:
        digest = fe.view.pending["digest"]
        fe.click("decide", decision="approved", by="ada", digest=digest)  # a typed name
        await until(lambda: "Refused" in fe.view.error, what="the refusal")
        assert "the panel decides as bob only" in fe.view.error
        assert fe.view.status == "pending"
        fe.click("decide", decision="approved", by="bob", digest=digest)
        await until(lambda: fe.view.status == "completed" and not fe.view.busy)

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            assert fe.view.identity == "bob (test)"
            assert fe.view.approver == "bob"  # not the login name: the identity
            assert fe.view.pending["policy"] == "approvers group:finance"
            await scenario(fe)
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert [(d.approver, d.identity, d.accepted) for d in run.decisions()] == [("bob", bob, True)]
    assert fe.view.decided["identity"] == "bob"


def test_a_refusal_by_the_policy_is_shown_and_audited(store: SqliteCheckpointer) -> None:
    eve = Identity("eve", (), "test")
    run = paused(store, eve, approvers={"bob"})

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            fe.click("decide", decision="approved", by="eve", digest=fe.view.pending["digest"])
            await until(lambda: "may not decide" in fe.view.error, what="the refusal")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert "eve is not among the approvers of before:pay (bob)" in fe.view.error
    assert run.status == "pending"
    assert [d.reason for d in run.decisions()] == [
        "not authorized: eve is not among the approvers of before:pay (bob)"
    ]


def test_without_a_policy_the_typed_name_is_kept_beside_the_identity(
    store: SqliteCheckpointer,
) -> None:
    run = build_refund_workflow(store).start({"requested": 1000})
    run.step()

    async def main() -> Frontend:
        fe = Frontend(run, by="Ada L.")
        try:
            fe.hello()
            assert "policy" not in fe.view.pending
            fe.click("decide", decision="rejected", by="Ada L.", digest=fe.view.pending["digest"])
            await until(lambda: fe.view.status == "rejected")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    me = run.workflow.identity()
    assert fe.view.identity == str(me)
    assert (fe.view.decided["by"], fe.view.decided["identity"]) == ("Ada L.", me.name)
