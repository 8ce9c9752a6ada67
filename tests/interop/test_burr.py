"""A Burr application in agentnb's panel: what the mirror shows is what Burr did."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("burr")

from burr.core import ApplicationBuilder, State, action, default, expr
from burr.lifecycle import PostRunStepHook

from agentnb.errors import ApprovalNotPending, DecisionError
from agentnb.interop.burr import attach, diagram
from agentnb.render.model import EdgeKind
from agentnb.store.records import EventType, Status

sys.path.insert(0, str(Path(__file__).parents[1] / "widgets"))


@action(reads=["amount"], writes=["amount", "log"])
def plan(state: State) -> State:
    return state.update(amount=state["amount"] + 100).append(log="plan")


@action(reads=[], writes=["log"])
def refund(state: State) -> State:
    return state.append(log="refund")


@action(reads=[], writes=["log"])
def small(state: State) -> State:
    return state.append(log="small")


class Seen(PostRunStepHook):  # type: ignore[misc]
    """Burr's own record of what ran: (action, the state it left)."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, dict[str, Any]]] = []

    def post_run_step(self, *, action: Any, state: Any, **_: Any) -> None:
        shown = {k: v for k, v in state.get_all().items() if not k.startswith("__")}
        self.steps.append((action.name, shown))


def refunds(amount: int, *hooks: Any, gate: Any = None) -> Any:
    """plan (+100) -> refund if amount > 500, else small."""
    actions: dict[str, Any] = {"plan": plan, "refund": refund, "small": small}
    if gate is not None:
        actions["plan"] = gate
    return (
        ApplicationBuilder()
        .with_actions(**actions)
        .with_transitions(("plan", "refund", expr("amount > 500")), ("plan", "small", default))
        .with_state(amount=amount, log=[])
        .with_entrypoint("plan")
        .with_hooks(*hooks)
        .build()
    )


def test_the_diagram_is_burrs_graph_with_its_conditions() -> None:
    app = refunds(0)
    d = diagram(app, halt_before=["refund"])
    theirs = {(t.from_.name, t.to.name, t.condition.name) for t in app.graph.transitions}
    assert theirs == {("plan", "refund", "amount > 500"), ("plan", "small", "default")}
    drawn = {(e.source, e.target, e.label, e.kind) for e in d.edges}
    assert ("plan", "refund", "amount > 500", EdgeKind.CONDITIONAL) in drawn
    assert ("plan", "small", None, EdgeKind.PLAIN) in drawn  # default: Burr's fallback
    assert {("refund", "END"), ("small", "END")} <= {(e.source, e.target) for e in d.edges}
    assert [n.id for n in d.nodes if n.entry] == [app.graph.entrypoint.name]
    assert [n.id for n in d.nodes if n.pause_before] == ["refund"]


@pytest.mark.parametrize("amount", [0, 450])
def test_running_mirrors_each_action_as_burr_ran_it(amount: int) -> None:
    theirs = Seen()
    refunds(amount, theirs).run(halt_after=["refund", "small"])
    run = attach(refunds(amount))
    run.run()
    assert run.status == Status.COMPLETED
    updates = [e for e in run.events if e.type == EventType.STATE_UPDATE]
    assert [e.node for e in updates] == [name for name, _ in theirs.steps]
    assert [c.state for c in run.history()][1:] == [state for _, state in theirs.steps]


def test_a_halt_before_pauses_where_burr_halts_and_approve_runs_it_once() -> None:
    own = refunds(450)
    halted, _, state = own.run(halt_before=["refund"])
    app = refunds(450)
    run = attach(app, halt_before=["refund"])
    run.run()
    assert run.status == Status.PENDING
    assert run.node == halted.name == "refund"
    assert run.state == {k: state[k] for k in ("amount", "log")}
    shown = run.pending_digest
    run.approve(by="ada", expected_digest=shown)
    assert run.status == Status.COMPLETED
    assert app.state["log"] == ["plan", "refund"]
    with pytest.raises(ApprovalNotPending):
        run.approve(by="ada", expected_digest=shown)
    assert [d.accepted for d in run.decisions()] == [True, False]


def test_reject_ends_the_mirror_and_the_action_never_runs() -> None:
    app = refunds(450)
    run = attach(app, halt_before=["refund"])
    run.run()
    run.reject(by="ada", comment="no")
    assert run.status == Status.REJECTED
    run.run()  # refused quietly: a rejected run does not step
    assert app.state["log"] == ["plan"]
    assert app.get_next_action().name == "refund"  # Burr itself has no "end" to write


def test_what_the_apps_own_code_runs_is_mirrored_by_its_hooks() -> None:
    app = refunds(0)
    run = attach(app)
    app.run(halt_after=["small"])  # plain Burr code, no agentnb
    assert run.status == Status.COMPLETED
    assert [e.node for e in run.events if e.type == EventType.NODE_START] == ["plan", "small"]
    assert run.state == {"amount": 100, "log": ["plan", "small"]}


def test_a_decision_after_the_app_moved_elsewhere_is_refused_and_audited() -> None:
    app = refunds(450)
    run = attach(app, halt_before=["refund"])
    run.run()
    shown = run.pending_digest
    app.step()  # someone ran refund without agentnb
    with pytest.raises(DecisionError):
        run.approve(by="ada", expected_digest=shown)
    assert [d.accepted for d in run.decisions()] == [False]
    assert app.state["log"] == ["plan", "refund"]  # once


def test_the_panel_stops_between_two_actions_and_step_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from widget_support import Recorder, run_async, until

    running, release = threading.Event(), threading.Event()

    @action(reads=["amount"], writes=["amount", "log"])
    def slow_plan(state: State) -> State:
        running.set()
        assert release.wait(10)
        return state.update(amount=state["amount"] + 100).append(log="plan")

    app = refunds(0, gate=slow_plan)
    run = attach(app, halt_before=["refund"])
    asked_to_stop = run.stop

    def stop() -> None:
        # The click cancels the panel's task, which asks Burr's stepping thread to stop
        # once the loop delivers the cancellation: only then may plan finish (released at
        # the click, a loaded loop let the thread start small first).
        asked_to_stop()
        release.set()

    monkeypatch.setattr(run, "stop", stop)

    async def main() -> Recorder[Any]:
        fe = Recorder(run.view())
        try:
            fe.hello()
            await until(lambda: fe.customs("diagram"), what="the drawing")
            fe.click("run")
            await until(running.is_set, what="plan running")
            fe.click("stop")  # plan finishes; small, next, never starts in this drive
            await until(lambda: fe.view.status == "cancelled" and not fe.view.busy, what="stop")
            assert app.state["log"] == ["plan"]
            assert app.get_next_action().name == "small"
            fe.click("step")
            await until(lambda: fe.view.status == "completed" and not fe.view.busy, what="end")
        finally:
            fe.close()
        return fe

    fe = run_async(main)
    (drawn,) = fe.customs("diagram")
    assert {"plan", "refund", "small"} <= set(drawn["nodes"].values())
    assert app.state["log"] == ["plan", "small"]


def test_attaching_again_mirrors_each_step_once_and_the_panel_approves_once() -> None:
    from widget_support import Recorder, run_async, until

    from agentnb.store.memory import MemoryCheckpointer

    app, store = refunds(450), MemoryCheckpointer()
    attach(app, halt_before=["refund"], store=store)
    run = attach(app, halt_before=["refund"], store=store)  # the cell run twice

    async def main() -> None:
        fe = Recorder(run.view())
        try:
            fe.hello()
            fe.click("step")
            await until(lambda: fe.view.status == "pending" and not fe.view.busy, what="pause")
            digest = fe.view.pending["digest"]
            for _ in range(2):  # a double click: two messages before any reply
                fe.click("decide", decision="approved", by="ada", digest=digest)
            await until(lambda: fe.view.status == "completed", what="the end")
            await until(lambda: "Refused" in fe.view.error, what="the second click's refusal")
        finally:
            fe.close()

    run_async(main)
    assert app.state["log"] == ["plan", "refund"]
    assert [d.accepted for d in run.decisions()] == [True, False]
    started = [e.node for e in run.events if e.type == EventType.NODE_START]
    assert started == ["plan", "refund"]


def test_an_agentnb_fork_of_a_burr_mirror_is_refused() -> None:
    from agentnb.errors import AgentnbError

    run = attach(refunds(0))
    run.run()
    with pytest.raises(AgentnbError, match="fork it through Burr"):
        run.fork(0)
