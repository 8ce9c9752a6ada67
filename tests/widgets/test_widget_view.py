"""RunView without a browser: what it shows, replays, draws and drives."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from widget_support import Frontend, displayed, run_async, until

from agentnb import END, SqliteCheckpointer, StateGraph
from agentnb.examples import build_refund_workflow
from agentnb.render.assets import VIZ_JS_SHA256
from agentnb.widgets import RunView, view
from agentnb.widgets._snapshot import SNAPSHOT_CLASS


def test_view_shows_where_the_run_stands_as_soon_as_it_is_made(store: SqliteCheckpointer) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000})
    v = view(run, title="refund demo", by="ada")
    try:
        assert isinstance(v, RunView)
        assert (v.status, v.node, v.step, v.title, v.approver) == (
            "running", "planner", 0, "refund demo", "ada"
        )  # fmt: skip
        assert v.state == {"requested": 1000}
        assert v.overlay["current"] == "planner"
        assert v.pending == {}
        assert "running at 'planner'" in repr(v)
    finally:
        v.close()


def test_a_new_view_of_a_finished_run_replays_its_drawing_and_whole_log(
    store: SqliteCheckpointer,
) -> None:
    payments: list[Any] = []
    run = build_refund_workflow(store, payments).start({"requested": 1000})
    run.run()
    run.approve(by="ada")
    run.run()
    fe = Frontend(run)
    try:
        fe.hello("v1")

        async def main() -> None:
            await until(lambda: fe.customs("events", "v1"), what="the replayed log")

        run_async(main)
        (diagram,) = fe.customs("diagram", "v1")
        assert diagram["mode"] == "svg"
        assert "<svg" in diagram["svg"]
        assert set(diagram["nodes"].values()) == {
            "START",
            "planner",
            "human_approval",
            "refund",
            END,
        }
        for dom_id in diagram["nodes"]:
            assert f'id="{dom_id}"' in diagram["svg"].replace("&#45;", "-")
        replay = fe.customs("events", "v1")[0]
        assert replay["reset"] is True
        assert [r["seq"] for r in replay["events"]] == [e.seq for e in run.events]
        assert fe.view.status == "completed"
        assert fe.view.overlay["status"] == "completed"
        assert fe.view.decided["by"] == "ada"
    finally:
        fe.close()


def test_a_second_view_gets_its_own_replay_and_the_first_is_not_sent_it_again(
    store: SqliteCheckpointer,
) -> None:
    run = build_refund_workflow(store, []).start({"requested": 10})
    fe = Frontend(run)
    try:
        fe.hello("v1")
        fe.hello("v2")

        async def main() -> None:
            await until(lambda: fe.customs("events", "v2"), what="v2's replay")

        run_async(main)
        replays = [m["view"] for m in fe.customs("events") if m.get("reset")]
        assert sorted(replays) == ["v1", "v2"]
    finally:
        fe.close()


@pytest.mark.parametrize("drawer", ["viz", "auto-without-dot"])
def test_without_dot_the_browser_gets_dot_source_and_the_ids_to_light(
    store: SqliteCheckpointer, drawer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if drawer == "auto-without-dot":
        monkeypatch.setattr("agentnb.render.svg.find_dot", lambda: None)
    run = build_refund_workflow(store, []).start({})
    fe = Frontend(run, drawer="viz" if drawer == "viz" else "auto")
    try:
        diagram = fe.drawing()
        assert diagram["mode"] == "dot"
        assert diagram["dot"].startswith("digraph agentnb {")
        for dom_id in diagram["nodes"]:
            assert f'id="{dom_id}"' in diagram["dot"]
        assert "svg" not in diagram
    finally:
        fe.close()


def test_viz_js_is_sent_as_one_binary_buffer_only_when_asked(store: SqliteCheckpointer) -> None:
    import hashlib

    run = build_refund_workflow(store, []).start({})
    fe = Frontend(run, drawer="viz")
    try:
        fe.hello()

        async def main() -> None:
            await until(lambda: fe.customs("diagram"), what="the drawing")
            assert fe.buffers("viz_js") == []  # the drawing never carries the 1.2 MB module
            fe.click("viz_js")
            await until(lambda: fe.buffers("viz_js"), what="viz.js")

        run_async(main)
        ((module,),) = fe.buffers("viz_js")
        assert hashlib.sha256(module).hexdigest() == VIZ_JS_SHA256
    finally:
        fe.close()


def test_step_runs_one_node_and_the_view_lights_the_pause(store: SqliteCheckpointer) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000})
    fe = Frontend(run)
    try:
        fe.hello()

        async def main() -> None:
            fe.click("step")
            await until(lambda: fe.view.status == "pending", what="the pause")
            await until(lambda: not fe.view.busy, what="the step to end")
            await until(lambda: len(fe.log()) == 4, what="the whole log")

        run_async(main)
        v = fe.view
        assert v.overlay["visited"] == ["planner"]
        assert v.overlay["pending"] == "human_approval"
        assert v.pending["node"] == "human_approval"
        assert v.pending["state"] == run.state
        assert v.pending["digest"] == run.pending_digest
        assert set(v.changed) == {"action", "amount", "messages"}
        types = [r["type"] for r in fe.log()]
        assert types == ["run_started", "node_start", "state_update", "interrupted"]
    finally:
        fe.close()


def test_step_while_pending_says_why_nothing_ran(store: SqliteCheckpointer) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000})
    run.step()
    fe = Frontend(run)
    try:

        async def main() -> None:
            fe.click("step")
            await until(lambda: "approve or reject it first" in fe.view.notice)

        run_async(main)
    finally:
        fe.close()


def test_a_failing_node_shows_its_error_in_the_view(store: SqliteCheckpointer) -> None:
    def boom(state: dict[str, Any]) -> None:
        raise ValueError("the payment API said no")

    g = StateGraph("fails").add_node("pay", boom).set_entry_point("pay").add_edge("pay", END)
    run = g.compile(store).start({})
    fe = Frontend(run)
    try:

        async def main() -> None:
            fe.click("run")
            await until(lambda: fe.view.status == "failed" and not fe.view.busy)

        run_async(main)
        assert "ValueError: the payment API said no" in fe.view.error
        assert fe.view.overlay["failed"] == "pay"
    finally:
        fe.close()


def test_stop_cancels_the_drive_and_the_run_can_be_continued(store: SqliteCheckpointer) -> None:
    gate = asyncio.Event()

    async def wait(state: dict[str, Any]) -> dict[str, Any]:
        await gate.wait()
        return {"waited": True}

    g = StateGraph("slow").add_node("wait", wait).set_entry_point("wait").add_edge("wait", END)
    run = g.compile(store).start({})
    fe = Frontend(run)
    try:

        async def main() -> None:
            fe.click("run")
            await until(lambda: fe.view.overlay.get("running") == "wait", what="node lit")
            fe.click("stop")
            await until(lambda: fe.view.status == "cancelled" and not fe.view.busy)
            assert "Stopped" in fe.view.notice
            gate.set()
            fe.click("run")
            await until(lambda: fe.view.status == "completed")

        run_async(main)
        assert fe.view.state == {"waited": True}
    finally:
        fe.close()


def test_history_sends_the_state_and_overlay_of_a_past_step(store: SqliteCheckpointer) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000})
    run.run()
    run.approve(by="ada")
    run.run()
    fe = Frontend(run)
    try:

        async def main() -> None:
            fe.click("history", view="v9", step=1)
            await until(lambda: fe.customs("history", "v9"))

        run_async(main)
        (past,) = fe.customs("history", "v9")
        assert past["step"] == 1
        assert past["node"] == "human_approval"
        assert "status" not in past["state"]
        assert past["overlay"]["pending"] == "human_approval"
        assert set(past["changed"]) == {"action", "amount", "messages"}
    finally:
        fe.close()


def test_runs_driven_by_code_reach_the_view_without_a_poll(store: SqliteCheckpointer) -> None:
    run = build_refund_workflow(store, []).start({"requested": 100})
    fe = Frontend(run, poll_interval=3600)  # only the workflow listener can wake it

    async def main() -> None:
        await asyncio.to_thread(run.run)
        await until(lambda: fe.view.status == "completed")

    try:
        run_async(main)
        assert fe.view.state["status"] == "success"
    finally:
        fe.close()


def test_polling_runs_only_while_a_view_is_open_and_close_stops_everything(
    store: SqliteCheckpointer,
) -> None:
    wf = build_refund_workflow(store, [])
    run = wf.start({})
    fe = Frontend(run)
    fe.assert_polls_only_while_a_view_is_open()
    assert fe.view._controls.saw not in wf.listeners


def test_displaying_a_view_adds_a_static_snapshot_for_kernel_less_readers(
    store: SqliteCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = build_refund_workflow(store, []).start({"requested": 1000})
    run.step()
    _, snapshot = displayed(RunView(run), monkeypatch)
    html = snapshot["text/html"]
    assert html.startswith(f'<div class="{SNAPSHOT_CLASS}"><svg')
    assert "pending" in snapshot["text/plain"]
    assert "awaiting approval before human_approval" in snapshot["text/plain"]
    assert not re.search(r"<(script|img|iframe)", html)


def test_the_public_names_are_pinned() -> None:
    import agentnb.widgets

    assert agentnb.widgets.__all__ == ["MachineView", "RunView", "view", "view_machine"]


@pytest.mark.parametrize(
    ("options", "message"),
    [({"drawer": "svg"}, "use one of auto, dot, viz"), ({"max_rate": 0}, "must be positive")],
)
def test_bad_options_are_refused_with_the_fix(
    store: SqliteCheckpointer, options: dict[str, Any], message: str
) -> None:
    run = build_refund_workflow(store, []).start({})
    with pytest.raises(ValueError, match=message):
        RunView(run, **options)


def test_the_browser_scrubs_drawings_with_the_allow_list_python_checks_with(
    store: SqliteCheckpointer,
) -> None:
    from agentnb.render.svg import SVG_ALLOW

    v = RunView(build_refund_workflow(store, []).start({"requested": 1}))
    try:
        assert v.get_state()["_svg_allow"] == SVG_ALLOW  # synced: the view reads the trait
    finally:
        v.close()
