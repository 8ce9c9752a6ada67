"""Notebook 10 · Bring your LangGraph graph: answer and refuse, fork, a subgraph inside.

Graded from the agentnb store a LangGraph thread was attached with (``attach(...,
store=...)``): the mirror's runs, events and decisions are what LangGraph did, as the
panel showed it. (``10.1`` is the capstone, checked at the end of notebook 09.)
"""

from __future__ import annotations

from typing import Any

from agentnb.store.records import RunRecord, Status
from agentnb.teach.course._facts import names, paused_node, where
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "10-bring-your-langgraph"


def _started_with(evidence: Evidence, run_id: str) -> dict[str, Any]:
    """The ``run_started`` payload of ``run_id`` (``{}`` if it has none)."""
    for event in evidence.events(run_id):
        if event.type == "run_started":
            return event.payload
    return {}


def _threads(evidence: Evidence) -> list[RunRecord]:
    """The runs mirroring a LangGraph thread (or a branch of one), oldest first; not the
    child runs of its subgraphs."""
    found = []
    for run in evidence.runs():
        mirrored = _started_with(evidence, run.run_id).get("langgraph")
        if isinstance(mirrored, dict) and "thread_id" in mirrored:
            found.append(run)
    return found


def _answered(evidence: Evidence, run_id: str) -> list[Any]:
    """The answers given to the run's ``interrupt(...)`` questions, accepted ones only."""
    answers = []
    for decision in evidence.decisions(run_id):
        update = (decision.edit or {}).get("update")
        if decision.accepted and isinstance(update, dict) and "answer" in update:
            answers.append(update["answer"])
    return answers


_NO_THREAD = "no LangGraph thread is recorded yet (attach one with store=exercise_store)"


@exercise(
    "10.2",
    "Answer a LangGraph question, then refuse the refund",
    hint="run.respond(value, by=...) answers the node's interrupt(...) (LangGraph receives "
    "Command(resume=value)); at the static interrupt before a node, run.reject(...) ends the "
    "thread without running that node.",
    notebook=NOTEBOOK,
)
def answer_then_refuse(evidence: Evidence) -> Outcome:
    threads = _threads(evidence)
    if not threads:
        return no(_NO_THREAD)
    for run in reversed(threads):
        answers = _answered(evidence, run.run_id)
        if run.status != Status.REJECTED or not answers:
            continue
        node = paused_node(evidence, run.run_id)
        ran = list(dict.fromkeys(evidence.nodes_started(run.run_id)))
        if node is not None and node not in ran:
            return ok(
                f"thread {run.run_id!r}: question answered with {answers[-1]!r}, then "
                f"rejected before `{node}`; only {names(ran)} ran"
            )
        return no(f"thread {run.run_id!r} was rejected, but {names(ran)} ran")
    run = threads[-1]
    if not _answered(evidence, run.run_id):
        return no(f"thread {run.run_id!r} has no answered question; {where(evidence, run)}")
    return no(where(evidence, run))


@exercise(
    "10.3",
    "Fork a LangGraph thread onto the other route",
    hint="run.fork(step, update={...}) continues from an older checkpoint with the edit "
    "applied (LangGraph's update_state there); the router then reads the edited state.",
    notebook=NOTEBOOK,
)
def fork_onto_the_other_route(evidence: Evidence) -> Outcome:
    threads = _threads(evidence)
    if not threads:
        return no(_NO_THREAD)
    forks = [r for r in threads if "forked_from" in _started_with(evidence, r.run_id)]
    if not forks:
        return no(f"{len(threads)} thread(s) recorded, none of them a fork of another")
    for branch in reversed(forks):
        if branch.status != Status.COMPLETED:
            continue
        left = _started_with(evidence, branch.run_id)["forked_from"]
        original = branch.run_id.rpartition("@")[0]
        events = evidence.events(original)
        # Where the branch left the thread: the checkpoint forked (or, with an edit, the
        # one the edit was written on), as the thread's own step recorded it.
        saved = {e.payload.get("checkpoint_id"): e.step for e in events}
        step = saved.get(left.get("checkpoint_id"), saved.get(left.get("parent"), left["step"]))
        theirs = [e.node for e in events if e.type == "node_start" and e.step >= step and e.node]
        theirs = list(dict.fromkeys(theirs))
        mine = list(dict.fromkeys(evidence.nodes_started(branch.run_id)))
        # Branch ids hold LangGraph's checkpoint ids: named by their thread and step only.
        if set(mine) != set(theirs):
            return ok(
                f"the branch of thread {original!r} forked at step {step} ran {names(mine)} "
                f"where the thread ran {names(theirs)}"
            )
        return no(
            f"the branch of thread {original!r} forked at step {step} ran {names(mine)}, "
            "as the thread did",
            "Edit the key the router reads when you fork, so the branch goes the other way.",
        )
    last = forks[-1]
    thread = last.run_id.rpartition("@")[0]
    return no(f"the branch of thread {thread!r} is {last.status.value}, not completed")


@exercise(
    "10.4",
    "A LangGraph subgraph, mirrored inside",
    hint="A compiled graph added as a node (builder.add_node(name, inner.compile())) is a "
    "subgraph: LangGraph streams its steps under its own namespace and agentnb mirrors them "
    "as a child run (run.children()). A graph called inside a node's function is not one.",
    notebook=NOTEBOOK,
)
def subgraph_inside(evidence: Evidence) -> Outcome:
    threads = _threads(evidence)
    if not threads:
        return no(_NO_THREAD)
    every = evidence.runs()
    for run in reversed(threads):
        if run.status != Status.COMPLETED:
            continue
        children = [c for c in every if c.run_id.startswith(f"{run.run_id}/")]
        for child in children:
            inner = evidence.nodes_started(child.run_id)
            if child.status == Status.COMPLETED and len(set(inner)) >= 2:
                node = child.run_id[len(run.run_id) + 1 :].partition("@")[0]
                return ok(
                    f"thread {run.run_id!r} completed; its subgraph `{node}` ran "
                    f"{names(inner)} inside, mirrored as a child run"
                )
        if children:
            return no(
                f"thread {run.run_id!r} has {len(children)} subgraph run(s), none that "
                "completed two nodes of its own"
            )
    finished = [r for r in threads if r.status == Status.COMPLETED]
    if not finished:
        return no(where(evidence, threads[-1]))
    return no(f"thread {finished[-1].run_id!r} completed without a subgraph run inside it")
