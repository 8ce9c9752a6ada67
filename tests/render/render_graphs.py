"""Graphs, events and SVG helpers shared by the render tests."""

from __future__ import annotations

import os
import random
import urllib.parse
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentnb.graph.builder import END, StateGraph
from agentnb.graph.workflow import Workflow
from agentnb.store.records import Event

SNAPSHOTS = Path(__file__).parent / "snapshots"
SVG = "{http://www.w3.org/2000/svg}"


def _noop(state: dict[str, Any]) -> None:
    return None


def refund_graph() -> StateGraph:
    """The seed's graph: planner routes to approval or straight to the refund."""
    g = StateGraph("refund")
    g.add_node("planner", _noop, description="decides the refund")
    g.add_node("human_approval", _noop)
    g.add_node("refund", _noop)
    g.set_entry_point("planner")
    g.add_conditional_edge(
        "planner",
        lambda s: "human_approval" if s["amount"] > 500 else "refund",
        ["human_approval", "refund"],
    )
    g.add_edge("human_approval", "refund")
    g.add_edge("refund", END)
    g.add_interrupt_before("human_approval")
    return g


def loop_graph() -> StateGraph:
    """write -> review, review loops back to write until approved; labelled outcomes."""
    g = StateGraph("essay loop")
    g.add_node("write", _noop)
    g.add_node("review", _noop)
    g.add_node("publish", _noop)
    g.set_entry_point("write")
    g.add_edge("write", "review")
    g.add_conditional_edge("review", lambda s: "revise", {"revise": "write", "ok": "publish"})
    return g  # publish has no edge: it ends implicitly


def interrupts_graph() -> StateGraph:
    """Pauses before, after, and both; a branch with two outcomes to one target and to END."""
    g = StateGraph("payments")
    for name in ("quote", "charge", "ship", "notify"):
        g.add_node(name, _noop)
    g.set_entry_point("quote")
    g.add_conditional_edge(
        "quote", lambda s: "go", {"go": "charge", "retry": "charge", "give up": END}
    )
    g.add_edge("charge", "ship")
    g.add_edge("ship", "notify")
    g.add_edge("notify", END)
    g.add_interrupt_before("charge", "ship")
    g.add_interrupt_after("charge", "notify")
    return g


def compiled(graph: StateGraph) -> Workflow:
    """Compile without a real store: drawing never touches it."""
    return graph.compile(checkpointer=object())  # type: ignore[arg-type]


def big_graph(nodes: int = 500, edges: int = 1000, seed: int = 20240601) -> StateGraph:
    """``nodes`` nodes and ``edges`` random (cyclic) edges, reproducibly."""
    rnd = random.Random(seed)
    names = [f"node{i}" for i in range(nodes)]
    g = StateGraph("big")
    for name in names:
        g.add_node(name, _noop)
    g.set_entry_point(names[0])
    per_node, extra = divmod(edges, nodes)
    for i, name in enumerate(names):
        k = per_node + (1 if i < extra else 0)
        g.add_conditional_edge(name, lambda s: "", rnd.sample(names, k))
    return g


def event(seq: int, type: str, node: str | None = None, **payload: Any) -> Event:
    return Event("r1", seq, seq, type, node, payload, 0.0)


def refund_events_pending() -> list[Event]:
    """Run r1 of the refund graph, paused before human_approval."""
    return [
        event(1, "run_started"),
        event(2, "node_start", "planner"),
        event(3, "state_update", "planner", delta={"amount": 1000}, next="human_approval"),
        event(4, "interrupted", "human_approval", digest="abc"),
    ]


def refund_events_completed() -> list[Event]:
    return [
        *refund_events_pending(),
        event(5, "approved", "human_approval"),
        event(6, "node_start", "human_approval"),
        event(7, "state_update", "human_approval", delta={}, next="refund"),
        event(8, "node_start", "refund"),
        event(9, "state_update", "refund", delta={"status": "success"}, next=END),
        event(10, "completed"),
    ]


@dataclass
class FakeRun:
    """Stands in for agentnb.graph.run.Run: drawing only reads these attributes."""

    workflow: Workflow
    run_id: str = "r1"
    status: str = "pending"
    node: str = "human_approval"
    events: list[Event] = field(default_factory=refund_events_pending)


def assert_snapshot(name: str, text: str) -> None:
    """Compare ``text`` with snapshots/<name>; AGENTNB_UPDATE_SNAPSHOTS=1 rewrites it."""
    path = SNAPSHOTS / name
    if os.environ.get("AGENTNB_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}; create it with AGENTNB_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from its snapshot; if the change is intended, rerun with "
        "AGENTNB_UPDATE_SNAPSHOTS=1 and review the diff"
    )


def decode(dom_id: str) -> str:
    return urllib.parse.unquote(dom_id, errors="surrogatepass")


@dataclass
class Drawn:
    """What an SVG shows: nodes by name, edges by (source, target), with texts and classes."""

    nodes: dict[str, tuple[str, set[str], str]]  # name -> (text, classes, title)
    edges: dict[tuple[str, str], tuple[str, set[str]]]  # (source, target) -> (text, classes)
    node_count: dict[str, int]  # name -> how many <g> carry its id


def parse_svg(svg: str) -> Drawn:
    root = ET.fromstring(svg)
    nodes: dict[str, tuple[str, set[str], str]] = {}
    edges: dict[tuple[str, str], tuple[str, set[str]]] = {}
    count: dict[str, int] = {}
    for g in root.iter(f"{SVG}g"):
        classes = set(g.get("class", "").split())
        gid = g.get("id", "")
        lines = [t.text or "" for t in g.iter(f"{SVG}text")]
        text = "\n".join(lines).replace("\xa0", " ")
        if "agentnb-node" in classes:
            name = decode(gid.removeprefix("node-"))
            count[name] = count.get(name, 0) + 1
            title = g.find(f"{SVG}title")
            nodes[name] = (text, classes, "" if title is None else title.text or "")
        elif "agentnb-edge" in classes:
            source, target = gid.removeprefix("edge-").split("~")[:2]
            edges[decode(source), decode(target)] = (text, classes)
    return Drawn(nodes, edges, count)


def as_drawn(text: str) -> str:
    """How Graphviz shows a label: NBSPs read as spaces, empty lines vanish."""
    return "\n".join(line for line in text.replace("\xa0", " ").split("\n") if line)
