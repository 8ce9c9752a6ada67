"""Facts several checkers establish the same way, phrased for a student."""

from __future__ import annotations

from agentnb.store.records import RunRecord, Status
from agentnb.teach.evidence import Evidence
from agentnb.teach.verdict import Outcome, no, ok

__all__ = ["names", "paused_node", "rejected_before_running", "where"]


def names(nodes: list[str]) -> str:
    """``planner``, ``refund`` — node names as code, joined."""
    return ", ".join(f"`{n}`" for n in nodes) if nodes else "no node"


def paused_node(evidence: Evidence, run_id: str) -> str | None:
    """The node the run last paused before (or after), from its ``interrupted`` events."""
    for event in reversed(evidence.events(run_id)):
        if event.type == "interrupted":
            return event.node
    return None


def where(evidence: Evidence, run: RunRecord) -> str:
    """One phrase for a run that is not what the exercise wants."""
    ran = names(evidence.nodes_started(run.run_id))
    if run.status == Status.PENDING:
        return f"run {run.run_id!r} is pending before `{run.node}`: no decision recorded yet"
    if run.status == Status.FAILED:
        error = evidence.failure(run.run_id) or {}
        return f"run {run.run_id!r} failed ({error.get('type', '?')}); {ran} ran"
    return f"run {run.run_id!r} is {run.status.value}; {ran} ran"


def rejected_before_running(evidence: Evidence, graph: str | None = None) -> Outcome:
    """A run rejected at an interrupt whose node (and everything after it) never ran."""
    runs = evidence.runs(graph)
    if not runs:
        return no("no run is recorded yet")
    for run in reversed(runs):
        if run.status != Status.REJECTED:
            continue
        node = paused_node(evidence, run.run_id)
        ran = evidence.nodes_started(run.run_id)
        paid = evidence.effects(run.run_id)
        if node is not None and node not in ran and not paid:
            return ok(
                f"run {run.run_id!r} rejected before `{node}`; only {names(ran)} ran; "
                "no side effect happened"
            )
        return no(
            f"run {run.run_id!r} was rejected, but {names(ran)} ran and "
            f"{len(paid)} side effect(s) happened",
            "A rejection is taken at the pause: the paused node must not have started yet.",
        )
    return no(where(evidence, runs[-1]))
