"""The panel and parallel branches: several held tasks shown and decided one at a time."""

from __future__ import annotations

import operator
from typing import Any

from widget_support import Frontend, run_async, until

from agentnb import SqliteCheckpointer, StateGraph


def test_each_held_task_is_shown_and_decided_in_turn_from_the_panel(
    store: SqliteCheckpointer,
) -> None:
    g = StateGraph("branches", reducers={"done": operator.add})
    g.add_node("plan", lambda s: None)
    for name in ("b", "c", "d"):
        g.add_node(name, lambda s, name=name: {"done": [name]})
        g.add_edge("plan", name)
    g.set_entry_point("plan").add_interrupt_before("b", "d")
    run = g.compile(store).start({"done": []})
    run.run()
    shown: list[Any] = []

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            for _ in range(2):
                pending = dict(fe.view.pending)
                shown.append((pending["task"], pending["waiting"]))
                assert fe.view.decided == {}  # a partly decided pause is not decided
                fe.click(
                    "decide",
                    decision="approved",
                    by="ada",
                    digest=pending["digest"],
                    task=pending["task"],
                )
                await until(lambda p=pending: fe.view.pending.get("task") != p["task"])
            await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert shown == [("b", ["b", "d"]), ("d", ["d"])]
    assert [(d.node, d.accepted) for d in fe.view.run.decisions()] == [("b", True), ("d", True)]
    assert fe.view.run.state["done"] == ["b", "c", "d"]


def test_a_question_is_shown_and_answered_once_from_the_panel(store: SqliteCheckpointer) -> None:
    from agentnb import NodeContext

    def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        seats = ctx.interrupt({"question": "How many seats?", "schema": {"type": "integer"}})
        return {"seats": seats}

    run = StateGraph("ask").add_node("ask", ask).set_entry_point("ask").compile(store).start({})
    run.run()

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            assert fe.view.pending["question"]["question"] == "How many seats?"
            fe.click("respond", value="three", by="ada")  # not an integer: refused
            await until(lambda: "does not fit the question" in fe.view.error)
            fe.click("respond", value=3, by="ada")
            await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert fe.view.run.state == {"seats": 3}
    assert [(d.accepted, d.edit) for d in fe.view.run.decisions()] == [(True, {"answer": 3})]


def test_the_panel_approves_with_edits(store: SqliteCheckpointer) -> None:
    g = StateGraph("refund")
    g.add_node("plan", lambda s: {"amount": 900})
    g.add_node("pay", lambda s: {"paid": s["amount"]})
    g.set_entry_point("plan").add_edge("plan", "pay").add_interrupt_before("pay")
    run = g.compile(store).start({})
    run.run()

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            digest = fe.view.pending["digest"]
            fe.click("decide", decision="approved", by="ada", digest=digest, update=[1])
            await until(lambda: "not a JSON object" in fe.view.error)
            fe.click("decide", decision="approved", by="ada", digest=digest, update={"amount": 300})
            await until(lambda: fe.view.status == "completed" and not fe.view.busy)
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert fe.view.run.state == {"amount": 300, "paid": 300}
    [decision] = fe.view.run.decisions()
    assert decision.edit is not None
    assert decision.edit["update"] == {"amount": 300}
