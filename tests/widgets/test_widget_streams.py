"""What a running node emits (``ctx.emit``) reaches the panel as it comes: coalesced, bounded."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from widget_support import Frontend, run_async, until

from agentnb import END, MemoryCheckpointer, SqliteCheckpointer, StateGraph
from agentnb.graph.streams import Emitted
from agentnb.widgets._tokens import ROWS, TEXT_LIMIT, TokenRows

TOKENS = 3000
MAX_RATE = 10.0


def emitted(data: Any, task: str = "speak", kind: str = "token") -> Emitted:
    return Emitted("r", task.partition("[")[0], task, kind, data, 0.0)


def apply(rows: dict[int, dict[str, Any]], payloads: list[dict[str, Any]]) -> None:
    """What the browser does with a ``tokens`` message's rows."""
    for d in payloads:
        old = rows.get(d["id"], {"text": ""})
        text = ((old["text"] if not d["reset"] else "") + d["append"])[-TEXT_LIMIT:]
        rows[d["id"]] = {**d, "text": text}


def test_a_row_keeps_its_newest_text_and_counts_what_it_no_longer_holds() -> None:
    rows = TokenRows()
    seen: dict[int, dict[str, Any]] = {}
    words = [f"w{i} " for i in range(5000)]
    for i, word in enumerate(words):
        rows.add(emitted(word))
        if i % 997 == 0:  # taken now and then, as the relay does
            apply(seen, rows.take())
    apply(seen, rows.take())
    (row,) = seen.values()
    whole = "".join(words)
    assert row["text"] == whole[-TEXT_LIMIT:]
    assert (row["chars"], row["items"]) == (len(whole), 5000)
    assert len(rows._rows[("speak", "token")].text) == TEXT_LIMIT  # the kernel's copy too


def test_data_that_is_not_text_is_shown_as_short_json() -> None:
    rows = TokenRows()
    rows.add(emitted({"done": 3, "of": 10}, kind="progress"))
    (payload,) = rows.take()
    assert payload["append"] == '{"done":3,"of":10} '
    assert payload["kind"] == "progress"


def test_an_ended_row_is_sent_once_more_then_forgotten() -> None:
    rows = TokenRows()
    rows.add(emitted("a", task="s[0]"))
    rows.add(emitted("b", task="s[1]"))
    rows.take()
    rows.finish("s[0]")
    (last,) = rows.take()
    assert (last["task"], last["done"], last["append"]) == ("s[0]", True, "")
    assert rows.open == 1
    assert [r["task"] for r in rows.snapshot()] == ["s[1]"]


def test_at_most_rows_tasks_stream_at_once_and_the_rest_are_counted() -> None:
    rows = TokenRows()
    for i in range(ROWS + 5):
        rows.add(emitted("x", task=f"s[{i}]"))
    assert rows.open == ROWS
    assert len(rows.take()) == ROWS
    assert rows.unshown == 5


def streaming_workflow(store: Any, tokens: int, more: Any = None) -> Any:
    """``speak`` emits ``tokens`` tokens, 50 per millisecond, and goes on while ``more()``."""

    async def speak(state: dict[str, Any], ctx: Any) -> dict[str, Any]:
        i, deadline = 0, time.monotonic() + 30
        while i < tokens or (more is not None and more() and time.monotonic() < deadline):
            ctx.emit("token", f"t{i} ")
            i += 1
            if i % 50 == 0:
                await asyncio.sleep(0.001)  # an LLM's tokens come over time
        return {"said": i}

    g = StateGraph("streaming")
    g.add_node("speak", speak)
    g.add_node("after", lambda s: {"done": True})
    g.set_entry_point("speak")
    g.add_edge("speak", "after")
    g.add_edge("after", END)
    return g.compile(store)


def test_run_from_the_panel_streams_the_nodes_tokens_coalesced_into_its_row(
    store: SqliteCheckpointer,
) -> None:
    views: list[Frontend] = []

    def more() -> bool:  # until the panel has sent two batches and lit the node
        fe = views[0]
        return len(fe.customs("tokens")) < 2 or fe.view.overlay.get("running") != "speak"

    run = streaming_workflow(store, TOKENS, more).start({})

    async def main() -> tuple[Frontend, float, list[str]]:
        fe = Frontend(run, max_rate=MAX_RATE)
        views.append(fe)
        lit: list[str] = []
        try:
            fe.hello()
            await until(lambda: fe.customs("events"), what="the replay")
            started = time.monotonic()
            fe.click("run")
            while fe.view.status != "completed" or fe.view.busy:
                lit.append(str(fe.view.overlay.get("running")))
                await asyncio.sleep(0.002)
            await until(lambda: any(r["done"] for m in fe.customs("tokens") for r in m["rows"]))
            return fe, time.monotonic() - started, lit
        finally:
            fe.close()

    fe, elapsed, lit = run_async(main)
    live = [m for m in fe.customs("tokens") if not m.get("view")]
    assert len(live) <= elapsed * MAX_RATE + 2, (len(live), elapsed)  # coalesced
    assert len(live) >= 2  # and streamed: not one message at the end
    seen: dict[int, dict[str, Any]] = {}
    for m in live:
        apply(seen, m["rows"])
    (row,) = seen.values()
    said = run.state["said"]
    assert said >= TOKENS
    whole = "".join(f"t{i} " for i in range(said))
    assert (row["node"], row["kind"], row["items"]) == ("speak", "token", said)
    assert row["text"] == whole[-TEXT_LIMIT:]
    assert row["chars"] == len(whole)
    assert row["done"] is True
    assert fe.view._tokens.open == 0  # nothing kept once the row ended
    assert "speak" in lit  # the streaming node was lit as running
    # The saved record (one event for the whole stream) reads as text in the log.
    (record,) = [e for e in run.events if e.type == "token"]
    assert record.payload["count"] == said


def test_a_view_opened_while_a_node_streams_gets_the_row_so_far() -> None:
    rows_seen: list[dict[str, Any]] = []
    views: list[Frontend] = []
    store = MemoryCheckpointer()

    # It streams on until the second view has had its replay.
    def more() -> bool:
        return not [m for m in views[0].customs("tokens") if m.get("view") == "v2"]

    run = streaming_workflow(store, 500, more).start({})

    async def main() -> None:
        fe = Frontend(run)
        views.append(fe)
        try:
            fe.hello("v1")
            fe.click("run")
            await until(lambda: fe.view._tokens.open, what="a row streaming")
            fe.hello("v2")
            await until(lambda: not more(), what="v2's replay")
            (replay,) = [m for m in fe.customs("tokens") if m.get("view") == "v2"]
            rows_seen.extend(replay["rows"])
            await until(lambda: fe.view.status == "completed" and not fe.view.busy, 30)
        finally:
            fe.close()

    run_async(main)
    assert rows_seen
    assert rows_seen[0]["reset"] is True
    assert rows_seen[0]["node"] == "speak"
    so_far = "".join(f"t{i} " for i in range(rows_seen[0]["items"]))
    assert rows_seen[0]["append"] == so_far[-TEXT_LIMIT:]
    assert rows_seen[0]["chars"] == len(so_far)


def drive_and_collect(store: Any, drive: str) -> tuple[Any, list[dict[str, Any]]]:
    """A view on a streaming run, driven by ``drive`` ("cell": run.arun() in the kernel,
    "step": the panel's Step); the live ``tokens`` messages it sent."""
    views: list[Frontend] = []

    def more() -> bool:  # until the panel has sent two batches of this node's tokens
        return len([m for m in views[0].customs("tokens") if not m.get("view")]) < 2

    run = streaming_workflow(store, 500, more).start({})

    async def main() -> Frontend:
        fe = Frontend(run, max_rate=MAX_RATE)
        views.append(fe)
        try:
            fe.hello()
            await until(lambda: fe.customs("events"), what="the replay")
            if drive == "cell":
                await run.arun()
            else:
                fe.click("step")
                await until(lambda: fe.view.step >= 1 and not fe.view.busy, 30, what="a step")
            await until(lambda: any(r["done"] for m in fe.customs("tokens") for r in m["rows"]))
            return fe
        finally:
            fe.close()

    fe = run_async(main)
    return run, [m for m in fe.customs("tokens") if not m.get("view")]


def test_a_run_driven_from_a_cell_streams_its_tokens_into_the_panel_too() -> None:
    run, live = drive_and_collect(MemoryCheckpointer(), "cell")
    assert len(live) >= 2  # as they came, not one message at the end
    seen: dict[int, dict[str, Any]] = {}
    for m in live:
        apply(seen, m["rows"])
    (row,) = seen.values()  # one row: a refresh between batches did not end it early
    said = run.state["said"]
    assert (row["node"], row["items"], row["done"]) == ("speak", said, True)
    assert row["text"] == "".join(f"t{i} " for i in range(said))[-TEXT_LIMIT:]


def test_step_from_the_panel_streams_the_nodes_tokens(store: SqliteCheckpointer) -> None:
    run, live = drive_and_collect(store, "step")
    assert len(live) >= 2
    seen: dict[int, dict[str, Any]] = {}
    for m in live:
        apply(seen, m["rows"])
    (row,) = seen.values()
    assert (row["node"], row["done"]) == ("speak", True)
    assert row["items"] == run.state["said"]
