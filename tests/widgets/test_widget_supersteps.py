"""A superstep as the panel names it: every task, the Sends counted, and where the run goes.

The texts are checked against the events a real parallel run recorded: the header and the
history pane name the frontier a checkpoint saved, the log rows name the next superstep as
the step's updates (all of them) lead to it — never ``END`` for a branch that waits at a join.
"""

from __future__ import annotations

import operator
from typing import Any

from widget_support import Frontend, run_async, until

from agentnb import Send, SqliteCheckpointer, StateGraph, Workflow
from agentnb.widgets._events import frontier_text, next_texts


def outline(store: SqliteCheckpointer) -> Workflow:
    """Notebook 06's exercise: papers has a longer way to the join than web."""
    g = StateGraph("outline", reducers={"notes": operator.add})
    g.add_node("plan", lambda s: None)
    for name in ("web", "papers", "cite"):
        g.add_node(name, lambda s, name=name: {"notes": [name]})
    g.add_node("write", lambda s: {"report": " / ".join(s["notes"])})
    g.set_entry_point("plan").add_edge("plan", "web").add_edge("plan", "papers")
    g.add_edge("papers", "cite").add_edge(["web", "cite"], "write")
    return g.compile(store)


def mapped(store: SqliteCheckpointer) -> Workflow:
    g = StateGraph("summaries", reducers={"summaries": operator.add})
    g.add_node("split", lambda s: None)
    g.add_node("write", lambda s: {"summaries": [s["doc"]]})
    g.add_node("report", lambda s: {"count": len(s["summaries"])})
    g.set_entry_point("split")
    g.add_conditional_edge(
        "split", lambda s: [Send("write", {"doc": d}) for d in s["docs"]], ["write"]
    )
    g.add_edge("write", "report")
    return g.compile(store)


def summaries(rows: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(r["step"], r["node"], r["summary"]) for r in rows if r["type"] == "state_update"]


def test_the_recorded_events_of_a_fan_out_name_the_next_superstep(
    store: SqliteCheckpointer,
) -> None:
    run = outline(store).start({"notes": []}, run_id="p")
    run.run()
    events = list(store.events("p"))
    # What the store recorded: web's own edge leads nowhere (it waits at the join).
    web = next(e for e in events if e.type == "state_update" and e.node == "web")
    assert web.payload["next"] == "END"
    assert next_texts(events) == {1: "papers + web", 2: "cite", 3: "write", 4: "END"}
    saved = {s: store.checkpoint("p", s) for s in range(1, 4)}
    assert [frontier_text(c.node, c.tasks) for c in saved.values()] == [
        "papers + web",
        "cite",
        "write",
    ]


def test_sends_are_counted_in_the_next_superstep_and_their_rows_name_the_task(
    store: SqliteCheckpointer,
) -> None:
    run = mapped(store).start({"docs": ["a", "b", "c"], "summaries": []}, run_id="m")
    run.run()
    assert next_texts(store.events("m"))[1] == "write ×3 (Send)"
    first = store.checkpoint("m", 1)
    assert frontier_text(first.node, first.tasks) == "write ×3 (Send)"

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            await until(lambda: fe.log(), what="the log")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert summaries(fe.log()) == [
        (1, "split", "no change → write ×3 (Send)"),
        (2, "write[0]", "summaries=+1 item(s) → report"),
        (2, "write[1]", "summaries=+1 item(s) → report"),
        (2, "write[2]", "summaries=+1 item(s) → report"),
        (3, "report", "count=3 → END"),
    ]


def test_header_history_and_log_name_every_task_of_a_superstep(
    store: SqliteCheckpointer,
) -> None:
    run = outline(store).start({"notes": []}, run_id="p")
    headers: list[str] = []

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            for step in range(1, 4):
                fe.click("step")
                await until(lambda s=step: fe.view.step == s and not fe.view.busy)
                headers.append(fe.view.frontier)
            fe.click("history", view="v1", step=1)
            await until(lambda: fe.customs("history", "v1"), what="the history")
            changed = list(fe.view.changed)
            fe.click("step")
            await until(lambda: fe.view.status == "completed" and not fe.view.busy)
            headers.append(fe.view.frontier)
            assert changed == ["notes"]
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert headers == ["papers + web", "cite", "write", "END"]
    (history,) = fe.customs("history", "v1")
    assert history["next"] == "papers + web"
    assert summaries(fe.log()) == [
        (1, "plan", "no change → papers + web"),
        (2, "papers", "notes=+1 item(s) → cite"),  # merged in task order: by name
        (2, "web", "notes=+1 item(s) → cite"),
        (3, "cite", "notes=+1 item(s) → write"),
        (4, "write", 'report="papers / web / cite" → END'),
    ]


def test_a_page_that_cuts_a_superstep_still_names_its_next_superstep(
    store: SqliteCheckpointer,
) -> None:
    run = outline(store).start({"notes": []}, run_id="p")
    run.run()

    async def main() -> list[dict[str, Any]]:
        fe = Frontend(run)
        try:
            fe.hello()
            await until(lambda: fe.log(), what="the log")
            # Rows 5 and 6 are papers' and web's updates (merged by name): one page each.
            papers = (await fe.rows(5, 1))["rows"]
            web = (await fe.rows(6, 1))["rows"]
            first = (await fe.rows(0, 1, kind="state_update"))["rows"]
            second = (await fe.rows(1, 1, kind="state_update"))["rows"]
        finally:
            fe.close()
        return web + papers + first + second

    assert summaries(run_async(main)) == [
        (2, "web", "notes=+1 item(s) → cite"),
        (2, "papers", "notes=+1 item(s) → cite"),
        (1, "plan", "no change → papers + web"),
        (2, "papers", "notes=+1 item(s) → cite"),
    ]


def test_a_history_the_closed_store_cannot_read_says_so_in_the_panel(
    store: SqliteCheckpointer,
) -> None:
    # Notebook 09 after Run All: its last cell closes the store the panel reads.
    run = outline(store).start({"notes": []}, run_id="closed")
    run.run()

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            store.close()
            fe.click("history", view="v1", step=1)
            await until(lambda: bool(fe.view.error), what="the error")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    assert fe.customs("history", "v1") == []
    assert fe.view.error.startswith("step 1 cannot be shown: the checkpointer for ")
    assert fe.view.error.endswith("is closed; open a new one")
