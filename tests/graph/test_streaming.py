"""Streaming from inside a node: live to astream(mode="custom"), one record in the store."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from agentnb import AgentnbError, NodeContext, StateGraph
from agentnb.graph import streams
from agentnb.graph.streams import Emitted

DEADLINE = 10.0


def test_tokens_reach_the_reader_while_the_node_still_runs() -> None:
    heard = asyncio.Event

    got: dict[str, Any] = {}

    async def talk(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", "Hel")
        # Goes on only once the reader has the first token: proves it is live.
        await asyncio.wait_for(got.setdefault("first", heard()).wait(), DEADLINE)
        ctx.emit("token", "lo")
        return {"said": "Hello"}

    g = StateGraph("talk").add_node("talk", talk).set_entry_point("talk")
    run = g.compile().start({})

    async def read() -> list[Emitted]:
        items = []
        async for item in run.astream(mode="custom"):
            items.append(item)
            got.setdefault("first", heard()).set()
        return items

    items = asyncio.run(read())
    assert [(i.node, i.kind, i.data) for i in items] == [
        ("talk", "token", "Hel"),
        ("talk", "token", "lo"),
    ]
    assert run.state == {"said": "Hello"}
    stored = [e for e in run.events if e.type == "token"]
    assert [e.payload for e in stored] == [{"data": ["Hel", "lo"], "count": 2}]


def test_a_flood_of_tokens_is_one_bounded_record_per_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams, "KEEP", 50)

    def flood(state: dict[str, Any], ctx: NodeContext) -> None:
        for i in range(5000):
            ctx.emit("token", i)
        ctx.emit("progress", {"done": 1.0})

    run = StateGraph("flood").add_node("flood", flood).set_entry_point("flood").compile().invoke({})
    custom = [e for e in run.events if e.type in ("token", "progress")]
    assert [e.type for e in custom] == ["token", "progress"]
    assert custom[0].payload["count"] == 5000
    assert custom[0].payload["data"] == list(range(50))
    assert custom[0].payload["dropped"] == 4950
    assert custom[1].payload == {"data": [{"done": 1.0}], "count": 1}


def test_streams_can_be_live_only() -> None:
    def talk(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.emit("token", "x")

    g = StateGraph("quiet").add_node("talk", talk).set_entry_point("talk")
    run = g.compile(keep_streams=False).start({})
    assert [i.data for i in run.stream(mode="custom")] == ["x"]
    assert [e.type for e in run.events] == [
        "run_started",
        "node_start",
        "state_update",
        "completed",
    ]


def test_sync_branches_stream_live_from_their_threads() -> None:
    barrier = threading.Event()

    def first(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.emit("token", "from a thread")
        assert barrier.wait(DEADLINE)  # released by the reader, who must have it already

    g = StateGraph("threads")
    g.add_node("start", lambda s: None).add_node("a", first).add_node("b", lambda s: None)
    g.set_entry_point("start").add_edge("start", "a").add_edge("start", "b")
    run = g.compile().start({})
    seen = []
    for item in run.stream(mode="custom"):
        seen.append((item.task, item.data))
        barrier.set()
    assert seen == [("a", "from a thread")]
    assert run.status == "completed"


def test_an_unknown_stream_mode_is_refused() -> None:
    run = StateGraph("m").add_node("a", lambda s: None).set_entry_point("a").compile().start({})
    with pytest.raises(AgentnbError, match="mode='custom'"):
        run.astream(mode="tokens")


def test_a_workflow_streams_what_its_nodes_emit() -> None:
    def talk(state: dict[str, Any], ctx: NodeContext) -> None:
        for token in ("a", "b"):
            ctx.emit("token", token)

    wf = StateGraph("wf").add_node("talk", talk).set_entry_point("talk").compile()
    assert [i.data for i in wf.stream({}, mode="custom")] == ["a", "b"]
    types = [e.type for e in wf.stream({})]
    assert types == ["run_started", "node_start", "token", "state_update", "completed"]


def test_aemit_each_streams_an_async_iterator_live_and_hands_each_item_to_the_node() -> None:
    got: dict[str, Any] = {}

    async def model() -> Any:  # an LLM client's token stream
        yield "Hel"
        # The next token comes only once the reader has the first: proves it is live.
        await asyncio.wait_for(got.setdefault("first", asyncio.Event()).wait(), DEADLINE)
        yield "lo"

    async def talk(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"said": "".join([t async for t in ctx.aemit_each("token", model())])}

    run = StateGraph("talk").add_node("talk", talk).set_entry_point("talk").compile().start({})

    async def read() -> list[Any]:
        items = []
        async for item in run.astream(mode="custom"):
            items.append(item.data)
            got.setdefault("first", asyncio.Event()).set()
        return items

    assert asyncio.run(read()) == ["Hel", "lo"]
    assert run.state == {"said": "Hello"}
    stored = [e.payload for e in run.events if e.type == "token"]
    assert stored == [{"data": ["Hel", "lo"], "count": 2}]


def test_emit_each_streams_a_sync_iterator_and_hands_each_item_to_the_node() -> None:
    def talk(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"said": "".join(ctx.emit_each("token", iter(["a", "b", "c"])))}

    wf = StateGraph("wf").add_node("talk", talk).set_entry_point("talk").compile()
    assert [i.data for i in wf.stream({}, mode="custom")] == ["a", "b", "c"]
    assert wf.invoke({}).state == {"said": "abc"}


def test_a_stream_listener_hears_every_emitted_item_whoever_drives_the_run() -> None:
    seen_in: list[str] = []

    def talk(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.emit("token", "sync")

    async def atalk(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.emit("token", "async")

    g = StateGraph("heard").add_node("talk", talk).add_node("atalk", atalk)
    wf = g.set_entry_point("talk").add_edge("talk", "atalk").compile()
    heard: list[Emitted] = []

    def listener(item: Emitted) -> None:
        heard.append(item)
        seen_in.append(threading.current_thread().name)

    stop = wf.subscribe(listener, mode="custom")
    run = wf.start({})
    run.run()  # a plain run: nobody reads astream(mode="custom")
    assert [(i.run_id, i.node, i.data) for i in heard] == [
        (run.run_id, "talk", "sync"),
        (run.run_id, "atalk", "async"),
    ]
    assert len(seen_in) == 2  # told at once, in the node's own thread
    stop()
    stop()  # harmless twice
    wf.start({}).run()
    assert len(heard) == 2  # removed: told no more


def test_a_stream_listener_that_raises_warns_and_the_run_goes_on() -> None:
    def talk(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        ctx.emit("token", "x")
        return {"done": True}

    wf = StateGraph("loud").add_node("talk", talk).set_entry_point("talk").compile()
    wf.subscribe(lambda item: 1 / 0, mode="custom")
    with pytest.warns(RuntimeWarning, match="ZeroDivisionError"):
        run = wf.start({}).run()
    assert run.status == "completed"
    assert run.state["done"] is True


def test_an_unknown_subscribe_mode_is_refused() -> None:
    wf = StateGraph("m").add_node("a", lambda s: None).set_entry_point("a").compile()
    with pytest.raises(AgentnbError, match="mode='custom'"):
        wf.subscribe(print, mode="tokens")  # type: ignore[call-overload]
