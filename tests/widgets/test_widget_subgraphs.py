"""Subgraph clusters in the panel: folded to their node on request, lit for what runs inside."""

from __future__ import annotations

from typing import Any

from widget_support import Frontend, run_async, until

from agentnb import END, SqliteCheckpointer, StateGraph
from agentnb.render.extract import diagram_from_graph
from agentnb.render.svg import render_svg
from agentnb.widgets._drawing import collapse, drawing_payload, id_prefix


def nested() -> StateGraph:
    """plan -> research (search -> deep (‖ dig) -> summarize) -> write: it pauses in deep."""
    deep = StateGraph("deep").add_node("dig", lambda s: {"dug": 1}).set_entry_point("dig")
    deep.add_edge("dig", END).add_interrupt_before("dig")
    research = StateGraph("research")
    research.add_node("search", lambda s: {"found": 3})
    research.add_node("deep", deep)
    research.add_node("summarize", lambda s: {"summary": "three"})
    research.set_entry_point("search").add_edge("search", "deep").add_edge("deep", "summarize")
    research.add_edge("summarize", END)
    g = StateGraph("report")
    g.add_node("plan", lambda s: {"topic": "graphs"})
    g.add_node("research", research)
    g.add_node("write", lambda s: {"text": "done"})
    g.set_entry_point("plan").add_edge("plan", "research").add_edge("research", "write")
    g.add_edge("write", END)
    return g


def test_folding_a_subgraph_keeps_its_node_and_drops_everything_in_its_box() -> None:
    whole = diagram_from_graph(nested(), legend=True)
    assert {c.id for c in whole.clusters} == {"research:subgraph", "research/deep:subgraph"}
    folded = collapse(whole, ["research:subgraph"])
    assert [n.id for n in folded.nodes] == ["START", "plan", "research", "write", "END"]
    (node,) = [n for n in folded.nodes if n.id == "research"]
    assert node.label == "research ⊞ 4 inside"  # search, deep, dig, summarize
    assert node.cluster is None
    assert folded.clusters == ()
    assert {(e.source, e.target) for e in folded.edges} == {
        ("START", "plan"), ("plan", "research"), ("research", "write"), ("write", END)
    }  # fmt: skip
    # The inner box alone: the outer one stays, with the folded node inside it.
    inner = collapse(whole, ["research/deep:subgraph", "no such cluster", "plan"])
    assert [c.id for c in inner.clusters] == ["research:subgraph"]
    assert {n.id for n in inner.nodes} - {n.id for n in whole.nodes} == set()
    assert "research/deep/dig" not in {n.id for n in inner.nodes}
    assert collapse(whole, []) is whole


def test_the_unfolded_drawing_is_the_static_one_and_says_what_can_fold(tmp_path: Any) -> None:
    with SqliteCheckpointer(tmp_path / "s.db") as store:
        workflow = nested().compile(store)
        payload = drawing_payload(workflow, "dot", "m" * 8)
        prefix = id_prefix("m" * 8)
        static = render_svg(diagram_from_graph(workflow, legend=True), id_prefix=prefix)
        assert payload["svg"] == static
        assert sorted(payload["collapsible"].values()) == [
            "research/deep:subgraph",
            "research:subgraph",
        ]
        assert payload["collapsed"] == {}
        folded = drawing_payload(workflow, "dot", "m" * 8, ["research:subgraph"])
        assert folded["collapsible"] == {}
        assert list(folded["collapsed"].values()) == ["research:subgraph"]
        (dom,) = folded["collapsed"]
        assert folded["nodes"][dom] == "research"
        assert "research/search" not in folded["nodes"].values()
        assert "research ⊞ 4 inside" in folded["svg"]


def test_a_view_folds_and_unfolds_a_cluster_and_lights_what_runs_inside(
    store: SqliteCheckpointer,
) -> None:
    run = nested().compile(store).start({})
    run.run()  # paused two subgraphs down, before dig
    assert run.status == "pending"
    fe = Frontend(run)
    try:
        fe.hello()
        fe.click("collapse", view="v1", collapsed=["research:subgraph"])
        fe.click("collapse", view="v1", collapsed=[])
        fe.click("collapse", view="v1", collapsed="research:subgraph")  # not a list: ignored

        async def main() -> None:
            await until(lambda: len(fe.customs("diagram", "v1")) == 3, what="three drawings")

        run_async(main)
        first, folded, unfolded = fe.customs("diagram", "v1")
        assert "research/search" in first["nodes"].values()
        assert "research/search" not in folded["nodes"].values()
        assert list(folded["collapsed"].values()) == ["research:subgraph"]
        assert unfolded == first  # laid out once, kept
        inside = fe.view.overlay["inside"]
    finally:
        fe.close()
    assert fe.view.overlay["pending"] == "research"
    assert "research/deep" in inside["current"]
    assert "research/deep/dig" in inside["current"]
    assert "research/deep/dig" in inside["pending"]
    assert inside["visited"][:2] == ["research/search", "research/deep"]
    assert ["research", "research/search", 1] in inside["traversed"]
    assert ["research/search", "research/deep", 1] in inside["traversed"]
    assert ["research/deep", "research/deep/dig", 1] in inside["traversed"]
