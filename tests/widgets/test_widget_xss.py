"""Hostile strings in node names, state, approvers and comments travel as data only."""

from __future__ import annotations

import json
import re
from typing import Any

from widget_support import XSS, Frontend, run_async, until

from agentnb import END, SqliteCheckpointer, StateGraph
from agentnb.render.svg import check_svg
from agentnb.widgets._snapshot import snapshot_bundle

NODE = XSS[1]  # '<img src=x onerror="window.__xss=2">' as a node name
TAGS = re.compile(r"<\s*(script|img|iframe|object|embed)\b", re.IGNORECASE)


def hostile_run(store: SqliteCheckpointer) -> Any:
    g = StateGraph(XSS[0])
    g.add_node(NODE, lambda s: {XSS[0]: XSS[2], "list": XSS})
    g.add_node("pay", lambda s: {"paid": True})
    g.set_entry_point(NODE)
    g.add_edge(NODE, "pay")
    g.add_edge("pay", END)
    g.add_interrupt_before("pay")
    return g.compile(store).start({"note": XSS[3]})


def test_hostile_strings_reach_the_browser_verbatim_as_json_data(
    store: SqliteCheckpointer,
) -> None:
    run = hostile_run(store)

    async def main() -> Frontend:
        fe = Frontend(run)
        try:
            fe.hello()
            fe.click("step")
            await until(lambda: fe.view.status == "pending" and not fe.view.busy)
            digest = fe.view.pending["digest"]
            fe.click("decide", decision="approved", by=XSS[1], comment=XSS[0], digest=digest)
            await until(lambda: fe.view.status == "completed")
            await until(lambda: len(fe.log()) == len(run.events))
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    v = fe.view
    assert v.state[XSS[0]] == XSS[2]
    assert v.state["list"] == XSS
    assert (v.decided["by"], v.decided["comment"]) == (XSS[1], XSS[0])
    assert NODE in v.overlay["visited"]
    rows = fe.log()
    assert any(r["node"] == NODE for r in rows)
    assert any(r["summary"] == f"by {XSS[1]}: {XSS[0]}" for r in rows)
    # The drawing is the only markup sent, and it holds the names escaped, never as tags.
    (diagram,) = fe.customs("diagram")
    check_svg(diagram["svg"])
    assert not TAGS.search(diagram["svg"])
    assert "&lt;img src=x onerror=&quot;window.__xss=2&quot;&gt;" in diagram["svg"]
    assert NODE in diagram["nodes"].values()
    # Everything else is JSON: the strings round-trip unchanged, whatever they contain.
    sent = json.dumps([data for data, _ in fe.sent])
    assert json.loads(sent) == [data for data, _ in fe.sent]


def test_the_static_snapshot_escapes_hostile_strings(store: SqliteCheckpointer) -> None:
    run = hostile_run(store)
    run.step()
    bundle = snapshot_bundle(run)
    assert not TAGS.search(bundle["text/html"])
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in bundle["text/html"]
    assert NODE in bundle["text/plain"]
