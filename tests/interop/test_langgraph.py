"""A LangGraph thread in agentnb's panels: what the mirror shows equals what LangGraph saved."""

from __future__ import annotations

import operator
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest

pytest.importorskip("langgraph")

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from agentnb.errors import ApprovalNotPending, DefinitionError, StaleApproval
from agentnb.interop.langgraph import attach, diagram, readable
from agentnb.render.model import EdgeKind, NodeKind
from agentnb.store.memory import MemoryCheckpointer
from agentnb.store.records import EventType, Status

sys.path.insert(0, str(Path(__file__).parents[1] / "widgets"))


class S(TypedDict, total=False):
    n: int
    log: Annotated[list[str], operator.add]


def _a(s: S) -> dict[str, Any]:
    return {"n": s["n"] + 1, "log": ["a"]}


def _b(s: S) -> dict[str, Any]:
    return {"log": ["b"]}


def _route(s: S) -> str:
    return "big" if s["n"] > 1 else "small"


def _anywhere(s: S) -> str:
    return END


def refund_graph(saver: Any, **compile: Any) -> Any:
    g = StateGraph(S)
    g.add_node("a", _a)
    g.add_node("b", _b)
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a")
    g.add_conditional_edges("a", _route, {"big": "b", "small": "c"})
    g.add_conditional_edges("b", _anywhere)  # no path map: LangGraph cannot know
    g.add_edge("c", END)
    return g.compile(checkpointer=saver, **compile)


def ask(s: S) -> dict[str, Any]:
    first = interrupt({"question": "amount?"})
    second = interrupt("reason?")
    return {"log": [f"{first}:{second}"]}


def asking_graph(saver: Any) -> Any:
    g = StateGraph(S)
    g.add_node("ask", ask)
    g.add_node("other", lambda s: {"log": [f"other:{interrupt('other?')}"]})
    g.add_edge(START, "ask")
    g.add_edge(START, "other")
    g.add_edge("ask", END)
    g.add_edge("other", END)
    return g.compile(checkpointer=saver)


@pytest.fixture(params=["memory", "sqlite"])
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "memory":
        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(tmp_path / "lg.db", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


# -- the diagram -------------------------------------------------------------------------


def test_the_diagram_is_langgraphs_own_with_outcomes_and_unknown_targets() -> None:
    app = refund_graph(InMemorySaver(), interrupt_before=["b"])
    d = diagram(app)
    drawn = app.get_graph()
    names = {n for n in drawn.nodes if not n.startswith("__")}
    assert {n.id for n in d.nodes if n.kind is NodeKind.NORMAL} == names
    conditional = {(e.source, e.target, e.label) for e in d.edges if e.kind is EdgeKind.CONDITIONAL}
    assert ("a", "b", "big") in conditional
    assert ("a", "c", "small") in conditional
    # LangGraph guesses b -> __end__ for a router without a path map; we do not.
    assert not any(e.source == "b" and e.target == "END" for e in d.edges)
    unknown = next(n for n in d.nodes if n.id == "b:unknown")
    assert unknown.label == "unknown targets"
    assert "_anywhere" in (unknown.description or "")
    assert ("b", "b:unknown", "_anywhere") in conditional
    assert next(n for n in d.nodes if n.id == "b").pause_before


def test_a_subgraph_is_drawn_as_a_foldable_box() -> None:
    from agentnb.widgets._drawing import collapse

    inner = StateGraph(S)
    inner.add_node("x", lambda s: {"log": ["x"]})
    inner.add_edge(START, "x")
    inner.add_edge("x", END)
    outer = StateGraph(S)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    d = diagram(outer.compile(checkpointer=InMemorySaver()))
    assert [c.id for c in d.clusters] == ["sub:subgraph"]
    assert ("sub", "sub/x") in {(e.source, e.target) for e in d.edges}
    folded = collapse(d, ["sub:subgraph"])
    assert [n.label for n in folded.nodes if n.id == "sub"] == ["sub ⊞ 1 inside"]


def test_a_subgraph_runs_in_its_parents_thread_and_its_inner_nodes_are_logged() -> None:
    inner = StateGraph(S)
    inner.add_node("x", lambda s: {"log": ["x"]})
    inner.add_edge(START, "x")
    inner.add_edge("x", END)
    outer = StateGraph(S)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    app = outer.compile(checkpointer=InMemorySaver())
    run = attach(app, config(), input={"n": 0, "log": []})
    run.run()
    assert run.status == Status.COMPLETED
    assert run.state == app.get_state(config()).values == {"n": 0, "log": ["x"]}
    started = [e.payload["task"] for e in run.events if e.type == EventType.NODE_START]
    assert started == ["sub", "sub/x"]


def test_a_graph_without_a_checkpointer_or_a_config_without_a_thread_is_refused() -> None:
    with pytest.raises(DefinitionError, match="no checkpointer"):
        attach(refund_graph(None), config())
    with pytest.raises(DefinitionError, match="thread"):
        attach(refund_graph(InMemorySaver()), {"configurable": {}})


# -- the mirror equals LangGraph's own -----------------------------------------------------


def test_stepping_mirrors_each_superstep_as_langgraph_saved_it(saver: Any) -> None:
    app = refund_graph(saver)
    run = attach(app, config(), input={"n": 0, "log": []})
    assert run.status == Status.RUNNING
    assert run.node == "a"
    result = run.step()
    assert (result.node, result.next, result.delta) == ("a", "c", {"n": 1, "log": ["a"]})
    assert run.state == app.get_state(config()).values  # one superstep, not to the end
    run.run()
    assert run.status == Status.COMPLETED
    own = run.thread_history()
    assert [s.values for s in own if s.metadata["step"] >= 0] == [c.state for c in run.history()]
    updates = [e for e in run.events if e.type == EventType.STATE_UPDATE]
    results = [t.result for s in own for t in s.tasks if t.name in ("a", "c")]
    assert [e.payload["delta"] for e in updates] == results
    assert [e.node for e in run.events if e.type == EventType.NODE_START] == ["a", "c"]


def test_a_static_interrupt_pauses_and_approve_resumes_it_once(saver: Any) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    run = attach(app, config(), input={"n": 5, "log": []})
    run.run()
    assert run.status == Status.PENDING
    assert run.node == "b"
    shown = run.pending_digest
    assert shown == app.get_state(config()).config["configurable"]["checkpoint_id"]
    run.decide("approved", by="ada", expected_digest=shown)
    assert run.status == Status.COMPLETED
    assert app.get_state(config()).values["log"] == ["a", "b"]
    with pytest.raises(ApprovalNotPending):  # a double click decides once
        run.decide("approved", by="ada", expected_digest=shown)
    assert [d.accepted for d in run.decisions()] == [True, False]


def test_reject_ends_the_thread_and_the_node_never_runs(saver: Any) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    run = attach(app, config(), input={"n": 5, "log": []})
    run.run()
    run.decide("rejected", by="ada", comment="no", expected_digest=run.pending_digest)
    assert run.status == Status.REJECTED
    assert app.get_state(config()).next == ()
    assert app.get_state(config()).values["log"] == ["a"]
    app.invoke(None, config())  # continuing the thread does nothing
    assert app.get_state(config()).values["log"] == ["a"]


def test_a_decision_on_a_thread_that_moved_on_is_refused(saver: Any) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    run = attach(app, config(), input={"n": 5, "log": []})
    run.run()
    shown = run.pending_digest
    assert shown is not None
    app.update_state(config(), {"n": 99})  # another process edits the thread meanwhile
    with pytest.raises(StaleApproval):
        run.decide("approved", by="ada", expected_digest=shown)
    assert app.get_state(config()).values["log"] == ["a"]  # b did not run
    assert [d.accepted for d in run.decisions()] == [False]


def test_approve_with_edits_goes_through_update_state(saver: Any) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    run = attach(app, config(), input={"n": 5, "log": []})
    run.run()
    run.decide("approved", by="ada", expected_digest=run.pending_digest, update={"n": 42})
    assert run.status == Status.COMPLETED
    assert app.get_state(config()).values == {"n": 42, "log": ["a", "b"]}
    assert run.decisions()[0].edit["update"] == {"n": 42}


def test_dynamic_interrupts_are_questions_answered_by_id(saver: Any) -> None:
    app = asking_graph(saver)
    run = attach(app, config(), input={"n": 0, "log": []})
    run.run()
    assert run.status == Status.PENDING
    asked = {i.id: i.value for i in app.get_state(config()).interrupts}
    held = {t.task_id for t in run.pending()}
    assert held == set(asked)
    for task, value in asked.items():
        answer = 7 if value == {"question": "amount?"} else "why"
        run.respond(answer, by="ada", task=task)
    state = app.get_state(config())
    assert state.interrupts
    assert state.interrupts[0].value == "reason?"
    (second,) = [t.task_id for t in run.pending()]
    run.respond("late", by="ada", task=second)
    assert run.status == Status.COMPLETED
    assert sorted(app.get_state(config()).values["log"]) == ["7:late", "other:why"]


def test_an_edit_and_a_fork_from_an_older_checkpoint_make_a_branch(saver: Any) -> None:
    app = refund_graph(saver)
    run = attach(app, config(), input={"n": 0, "log": []})
    run.run()
    assert app.get_state(config()).values["log"] == ["a", "c"]
    branch = run.fork(1, update={"n": 10})  # after a, with n edited: route goes to b
    assert branch.run_id.startswith("t1@")
    assert branch.status == Status.RUNNING
    branch.run()
    assert branch.state["log"] == ["a", "b"]
    assert run.state["log"] == ["a", "c"]  # the original branch is unchanged
    tree = run.branches()
    assert any(len(children) == 2 for children in tree.values())
    started = branch.events[0]
    left = next(s for s in run.thread_history() if s.metadata["step"] == 1)
    assert started.payload["forked_from"]["parent"] == left.config["configurable"]["checkpoint_id"]
    assert started.step == 2  # the edit is the branch's first checkpoint


def test_update_state_is_mirrored_as_a_step(saver: Any) -> None:
    app = refund_graph(saver)
    run = attach(app, config(), input={"n": 0, "log": []})
    run.step()
    before = run.steps
    run.update_state({"n": 3}, as_node="a")
    assert run.steps == before + 1
    assert run.state == app.get_state(config()).values == {"n": 3, "log": ["a"]}
    edit = run.events[-1]
    assert edit.type == EventType.STATE_UPDATE
    assert edit.payload["delta"] == {"n": 3}
    run.run()  # LangGraph routes from the edited state: n > 1 goes to b
    assert app.get_state(config()).values["log"] == ["a", "b"]


def test_langchain_messages_are_shown_readably() -> None:
    messages = pytest.importorskip("langchain_core.messages")
    shown = readable({"messages": [messages.HumanMessage("hi", id="1"), messages.AIMessage("yo")]})
    assert shown == {
        "messages": [
            {"type": "human", "content": "hi", "id": "1"},
            {"type": "ai", "content": "yo"},
        ]
    }


# -- the panel ---------------------------------------------------------------------------


@pytest.mark.parametrize("mirror", ["memory", "sqlite"])
def test_the_panel_draws_langgraphs_graph_steps_and_approves(mirror: str, tmp_path: Path) -> None:
    from widget_support import Recorder, run_async, until

    from agentnb import SqliteCheckpointer

    app = refund_graph(InMemorySaver(), interrupt_before=["b"])
    # An SQLite mirror decides and resumes in a worker thread: the kernel's loop stays free.
    store = MemoryCheckpointer() if mirror == "memory" else SqliteCheckpointer(tmp_path / "a.db")
    run = attach(app, config(), input={"n": 5, "log": []}, store=store)

    async def main() -> Recorder[Any]:
        fe = Recorder(run.view())
        try:
            fe.hello()
            await until(lambda: fe.customs("diagram"), what="the drawing")
            fe.click("step")
            await until(lambda: fe.view.status == "pending" and not fe.view.busy, what="pause")
            assert fe.view.pending["node"] == "b"
            digest = fe.view.pending["digest"]
            for _ in range(2):  # a double click: two messages before any reply
                fe.click("decide", decision="approved", by="ada", digest=digest)
            await until(lambda: fe.view.status == "completed", what="the end")
            await until(lambda: "Refused" in fe.view.error, what="the second click's refusal")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    (drawn,) = fe.customs("diagram")
    assert "b:unknown" in drawn["nodes"].values()
    assert app.get_state(config()).values["log"] == ["a", "b"]  # b ran once
    assert [d.accepted for d in run.decisions()] == [True, False]
    store.close()


def test_a_fork_to_before_an_interrupt_node_asks_again(saver: Any) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    run = attach(app, config(), input={"n": 5, "log": []})
    run.run()
    run.decide("approved", by="ada", expected_digest=run.pending_digest)
    branch = run.fork(1)  # back to where b waited for its approval
    assert branch.status == Status.PENDING
    assert branch.node == "b"
    branch.decide("rejected", by="ada", expected_digest=branch.pending_digest)
    assert branch.thread_state().next == ()
    assert run.state["log"] == ["a", "b"]


def test_a_thread_langgraph_paused_before_it_was_attached_shows_the_pause(saver: Any) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    app.invoke({"n": 5, "log": []}, config())  # plain LangGraph code, no agentnb
    run = attach(app, config())
    assert run.status == Status.PENDING
    assert run.state == app.get_state(config()).values


def test_what_langgraph_code_did_to_the_thread_is_mirrored_at_the_next_sync(saver: Any) -> None:
    app = refund_graph(saver)
    run = attach(app, config(), input={"n": 0, "log": []})
    run.step()
    app.invoke(None, config())  # someone drives the thread without agentnb
    run.sync()
    assert run.status == Status.COMPLETED
    assert run.state == app.get_state(config()).values == {"n": 1, "log": ["a", "c"]}


def test_a_second_driver_is_refused_while_one_holds_the_thread(saver: Any) -> None:
    from agentnb.errors import RunBusy

    app = refund_graph(saver)
    store = MemoryCheckpointer()
    run = attach(app, config(), input={"n": 0, "log": []}, store=store)
    other = attach(app, config(), store=store)
    store.acquire(other.run_id, other.owner)
    with pytest.raises(RunBusy):
        run.step()
    assert app.get_state(config()).values == {}


def test_an_interrupt_after_pauses_after_its_node_and_approve_goes_on(saver: Any) -> None:
    app = refund_graph(saver, interrupt_after=["a"])
    run = attach(app, config(), input={"n": 0, "log": []})
    run.run()
    assert run.status == Status.PENDING
    paused = run.events[-1]
    assert paused.type == EventType.INTERRUPTED
    assert (paused.payload["when"], paused.payload["after"], paused.node) == ("after", "a", "c")
    run.decide("approved", by="ada", expected_digest=run.pending_digest)
    assert run.status == Status.COMPLETED
    assert app.get_state(config()).values["log"] == ["a", "c"]


def test_the_panel_answers_each_question_by_its_interrupt_id() -> None:
    from widget_support import Recorder, run_async, until

    app = asking_graph(InMemorySaver())
    run = attach(app, config(), input={"n": 0, "log": []})
    run.run()

    async def main() -> Recorder[Any]:
        fe = Recorder(run.view())
        try:
            fe.hello()
            for _ in range(3):  # ask's two questions, other's one, each shown in turn
                await until(lambda: fe.view.pending.get("task"), what="a question")
                pending = fe.view.pending
                assert pending["when"] == "input"
                answer = {"amount?": 7, "reason?": "late", "other?": "why"}[
                    pending["question"]["question"]
                ]
                fe.click("respond", value=answer, by="ada", task=pending["task"])
                await until(lambda p=pending: fe.view.pending != p, what="the next question")
            await until(lambda: fe.view.status == "completed", what="the end")
        finally:
            fe.close()
        return fe

    run_async(main)
    assert sorted(app.get_state(config()).values["log"]) == ["7:late", "other:why"]


def test_a_fan_out_and_its_join_are_logged_in_step_order(saver: Any) -> None:
    g = StateGraph(S)
    for name in ("plan", "web", "papers", "write"):
        g.add_node(name, lambda s, name=name: {"log": [name]})
    g.add_edge(START, "plan")
    g.add_edge("plan", "web")
    g.add_edge("plan", "papers")
    g.add_edge(["web", "papers"], "write")
    g.add_edge("write", END)
    app = g.compile(checkpointer=saver)
    joined = {(e.source, e.label) for e in diagram(app).edges if e.target == "write"}
    assert joined == {("web", "web + papers"), ("papers", "web + papers")}
    run = attach(app, config(), input={"log": []})
    run.step()
    assert sorted(app.get_state(config()).next) == ["papers", "web"]
    run.run()
    assert run.state == app.get_state(config()).values
    events = run.events
    assert [e.step for e in events] == sorted(e.step for e in events)
    order = [(e.type, e.node) for e in events if e.type in (EventType.NODE_START, "state_update")]
    assert order.index((EventType.NODE_START, "write")) > order.index(("state_update", "web"))
    assert order.index((EventType.NODE_START, "write")) > order.index(("state_update", "papers"))


# -- subgraphs: child runs, lit live, folded like agentnb's own ------------------------------


def _nested(saver: Any, gate: Callable[[str], None] = lambda name: None) -> Any:
    """pre -> sub (x -> deep (z) -> y) -> post; ``gate(drawn name)`` runs inside each node."""

    def node(drawn: str) -> Callable[[S], dict[str, Any]]:
        def fn(s: S) -> dict[str, Any]:
            gate(drawn)
            return {"log": [drawn]}

        return fn

    deep = StateGraph(S)
    deep.add_node("z", node("sub/deep/z"))
    deep.add_edge(START, "z")
    deep.add_edge("z", END)
    sub = StateGraph(S)
    sub.add_node("x", node("sub/x"))
    sub.add_node("deep", deep.compile())
    sub.add_node("y", node("sub/y"))
    sub.add_edge(START, "x")
    sub.add_edge("x", "deep")
    sub.add_edge("deep", "y")
    sub.add_edge("y", END)
    outer = StateGraph(S)
    outer.add_node("pre", node("pre"))
    outer.add_node("sub", sub.compile())
    outer.add_node("post", node("post"))
    outer.add_edge(START, "pre")
    outer.add_edge("pre", "sub")
    outer.add_edge("sub", "post")
    outer.add_edge("post", END)
    return outer.compile(checkpointer=saver)


def _langgraphs_own(app: Any, thread: str, input: Any) -> dict[str, Any]:
    """What LangGraph streams of each subgraph, by drawn path (``sub``, ``sub/deep``): its
    tasks' starts and writes in order, and its last checkpoint's values."""
    own: dict[str, Any] = {}
    stream = app.stream(
        input, config(thread), stream_mode="debug", subgraphs=True, durability="sync"
    )
    for namespace, chunk in stream:
        if not namespace:
            continue
        drawn = "/".join(part.partition(":")[0] for part in namespace)
        seen = own.setdefault(drawn, {"tasks": [], "values": None})
        if chunk["type"] == "task":
            seen["tasks"].append((EventType.NODE_START, chunk["payload"]["name"]))
        elif chunk["type"] == "task_result":
            seen["tasks"].append((EventType.STATE_UPDATE, chunk["payload"]["name"]))
        elif chunk["type"] == "checkpoint":
            seen["values"] = chunk["payload"]["values"]
    return own


def _mirrored(run: Any, prefix: str = "") -> dict[str, Any]:
    """The same, read from the mirror's child runs (``run.children()``, nested)."""
    found: dict[str, Any] = {}
    for child in run.children():
        drawn = prefix + child.run_id.rpartition("/")[2].partition("@")[0]
        kinds = (EventType.NODE_START, EventType.STATE_UPDATE)
        tasks = [(e.type, e.node) for e in child.events if e.type in kinds]
        found[drawn] = {"tasks": tasks, "values": child.state, "status": child.status}
        found.update(_mirrored(child, f"{drawn}/"))
    return found


def test_each_subgraph_task_is_a_child_run_holding_what_langgraph_streamed(saver: Any) -> None:
    app = _nested(saver)
    own = _langgraphs_own(app, "langgraph", {"log": []})
    run = attach(app, config(), input={"log": []})
    run.run()
    mirrored = _mirrored(run)
    assert set(mirrored) == set(own) == {"sub", "sub/deep"}
    for drawn, seen in own.items():
        assert mirrored[drawn]["tasks"] == seen["tasks"]
        assert mirrored[drawn]["values"] == seen["values"]
        assert mirrored[drawn]["status"] == Status.COMPLETED
    assert run.state == app.get_state(config("langgraph")).values


def test_the_panel_lights_each_inner_node_while_langgraph_runs_it_and_folds_its_box() -> None:
    from widget_support import Recorder, run_async, until

    shown: dict[str, Any] = {}
    lit: list[str] = []

    def gate(drawn: str) -> None:  # inside the node, while LangGraph runs it
        view = shown.get("view")
        if view is None or "/" not in drawn:
            return
        deadline = time.monotonic() + 10
        while drawn not in (view.overlay.get("inside") or {}).get("current", []):
            assert time.monotonic() < deadline, f"{drawn} was not lit while it ran"
            time.sleep(0.005)
        lit.append(drawn)

    app = _nested(InMemorySaver(), gate)
    own = _langgraphs_own(app, "langgraph", {"log": []})
    run = attach(app, config(), input={"log": []})

    async def main() -> Recorder[Any]:
        fe = Recorder(run.view())
        shown["view"] = fe.view
        try:
            fe.hello()
            fe.click("run")
            await until(lambda: fe.view.status == "completed" and not fe.view.busy, what="end")
            fe.click("collapse", view="v1", collapsed=["sub:subgraph"])
            await until(lambda: len(fe.customs("diagram")) == 2, what="the folded drawing")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    started = [
        f"{drawn}/{name}"
        for drawn, seen in sorted(own.items())
        for kind, name in seen["tasks"]
        if kind == EventType.NODE_START and name != "deep"
    ]
    assert sorted(lit) == sorted(started) == ["sub/deep/z", "sub/x", "sub/y"]
    assert lit == ["sub/x", "sub/deep/z", "sub/y"]  # in the order LangGraph ran them
    whole, folded = fe.customs("diagram")
    assert {"sub/x", "sub/deep/z"} <= set(whole["nodes"].values())
    assert "sub/x" not in folded["nodes"].values()
    assert list(folded["collapsed"].values()) == ["sub:subgraph"]


def test_an_interrupt_inside_a_subgraph_is_lit_there_and_answered_from_the_root(
    saver: Any,
) -> None:
    from agentnb.widgets import RunView

    def ask(s: S) -> dict[str, Any]:
        return {"log": [f"ask:{interrupt('why?')}"]}

    sub = StateGraph(S)
    sub.add_node("ask", ask)
    sub.add_edge(START, "ask")
    sub.add_edge("ask", END)
    outer = StateGraph(S)
    outer.add_node("sub", sub.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    app = outer.compile(checkpointer=saver)
    app.invoke({"log": []}, config("langgraph"))
    theirs = app.get_state(config("langgraph"), subgraphs=True).tasks[0].state
    run = attach(app, config(), input={"log": []})
    run.run()
    (child,) = run.children()
    assert child.status == Status.PENDING
    assert child.node == "ask" == theirs.next[0]
    assert child.state == theirs.values
    view = RunView(run)
    try:
        assert view.overlay["pending"] == "sub"
        assert view.overlay["inside"]["pending"] == ["sub/ask"]
    finally:
        view.close()
    run.respond("because", by="ada")
    app.invoke(Command(resume="because"), config("langgraph"))
    assert child.record.status == Status.COMPLETED
    assert run.state == app.get_state(config("langgraph")).values == {"log": ["ask:because"]}


# -- Stop: LangGraph's drain, at a superstep boundary ------------------------------------------


def _slow_graph(saver: Any, during: Callable[[], None]) -> Any:
    def slow(s: S) -> dict[str, Any]:
        during()
        return {"log": ["slow"]}

    g = StateGraph(S)
    g.add_node("slow", slow)
    g.add_node("after", lambda s: {"log": ["after"]})
    g.add_edge(START, "slow")
    g.add_edge("slow", "after")
    g.add_edge("after", END)
    return g.compile(checkpointer=saver)


def test_stop_drains_the_thread_after_the_running_superstep_as_langgraph_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from langgraph.errors import GraphDrained
    from langgraph.runtime import RunControl
    from widget_support import Recorder, run_async, until

    control = RunControl()
    entered, release = threading.Event(), threading.Event()

    def during() -> None:
        if shown.get("ours"):
            entered.set()
            assert release.wait(10)
        else:
            control.request_drain("stopped")  # LangGraph's own Stop, at the same moment

    shown: dict[str, bool] = {}
    app = _slow_graph(InMemorySaver(), during)
    with pytest.raises(GraphDrained):
        app.invoke({"log": []}, config("langgraph"), control=control, durability="sync")
    theirs = app.get_state(config("langgraph"))
    assert theirs.next == ("after",)
    shown["ours"] = True
    run = attach(app, config(), input={"log": []})
    drain = run.stop

    def stop(reason: str = "stopped") -> bool:
        # The click cancels the panel's task, which asks LangGraph to drain once the loop
        # delivers the cancellation: only then may the node in flight finish (released at
        # the click, a loaded loop let the thread run the next superstep first).
        asked = drain(reason)
        release.set()
        return asked

    monkeypatch.setattr(run, "stop", stop)

    async def main() -> None:
        fe = Recorder(run.view())
        try:
            fe.hello()
            fe.click("run")
            await until(entered.is_set, what="slow running")
            fe.click("stop")  # the node in flight finishes; the next superstep never starts
            await until(lambda: fe.view.status == "cancelled" and not fe.view.busy, what="stop")
            ours = app.get_state(config())
            assert (ours.values, ours.next) == (theirs.values, theirs.next)
            assert run.state == ours.values
            assert "Stopped" in fe.view.notice
            fe.click("run")  # continues the thread, as stream(None, config) does
            await until(lambda: fe.view.status == "completed", what="the end")
        finally:
            fe.close()

    run_async(main)
    app.invoke(None, config("langgraph"))
    assert app.get_state(config()).values == app.get_state(config("langgraph")).values
    kinds = [e.type for e in run.events]
    assert kinds.index(EventType.CANCELLED) < kinds.index(EventType.COMPLETED)
    assert run.stop() is False  # nothing in progress


def test_stop_inside_a_subgraph_drains_it_at_its_own_boundary(saver: Any) -> None:
    from langgraph.errors import GraphDrained
    from langgraph.runtime import RunControl

    control = RunControl()
    ours: list[Any] = []

    def gate(drawn: str) -> None:
        if drawn == "sub/x":
            if ours:
                assert ours[0].stop()
            else:
                control.request_drain("stopped")

    app = _nested(saver, gate)
    with pytest.raises(GraphDrained):
        app.invoke({"log": []}, config("langgraph"), control=control, durability="sync")
    theirs = app.get_state(config("langgraph"), subgraphs=True)
    run = attach(app, config(), input={"log": []})
    ours.append(run)
    run.run()
    assert run.status == Status.CANCELLED
    now = app.get_state(config(), subgraphs=True)
    assert (now.values, now.next) == (theirs.values, theirs.next) == ({"log": ["pre"]}, ("sub",))
    (child,) = run.children()
    assert child.status == Status.CANCELLED
    assert child.state == now.tasks[0].state.values == theirs.tasks[0].state.values
    assert child.node == "deep" == now.tasks[0].state.next[0]
    ours.clear()
    run.run()
    app.invoke(None, config("langgraph"))
    assert run.status == Status.COMPLETED
    assert run.state == app.get_state(config("langgraph")).values


def test_a_fork_whose_edit_routes_to_the_end_and_a_finished_thread_show_completed(
    saver: Any,
) -> None:
    app = refund_graph(saver, interrupt_before=["b"])
    run = attach(app, config(), input={"n": 5, "log": []})
    run.run()  # pending before b
    app.update_state(run.head_config, None, as_node="c")  # LangGraph: c wrote last, c -> END
    assert app.get_state(config()).next == ()
    later = attach(app, config(), store=MemoryCheckpointer())  # attached when it is done
    assert later.status == Status.COMPLETED
    assert later.events[-1].type == EventType.COMPLETED


def test_step_runs_a_subgraph_whole_as_langgraphs_interrupt_after_does(saver: Any) -> None:
    app = _nested(saver)
    run = attach(app, config(), input={"log": []})
    given: Any = {"log": []}
    for _ in range(3):
        run.step()
        for _ in app.stream(given, config("langgraph"), interrupt_after="*", durability="sync"):
            pass
        given = None
        theirs, ours = app.get_state(config("langgraph")), app.get_state(config())
        assert (ours.values, ours.next) == (theirs.values, theirs.next)
        assert run.state == ours.values
    assert run.status == Status.COMPLETED
    assert [c.status for c in run.children()] == [Status.COMPLETED]
