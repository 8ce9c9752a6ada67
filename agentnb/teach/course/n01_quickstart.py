"""Notebook 01 · Quickstart: a rejected refund, a node that appends, an undeclared route."""

from __future__ import annotations

from agentnb.store.records import Status
from agentnb.teach.course._facts import names, rejected_before_running, where
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "01-quickstart"


@exercise(
    "01.1",
    "Reject a big refund",
    hint="A big refund pauses before the approval node; a decision is taken while the run "
    "is pending (run.reject), and the paused node never runs after a rejection.",
    notebook=NOTEBOOK,
)
def reject_a_big_refund(evidence: Evidence) -> Outcome:
    return rejected_before_running(evidence)


@exercise(
    "01.2",
    "A `notify` node after `refund` that appends a message",
    hint="A node returns only the keys it changes; the `messages` key is merged by the "
    "append reducer, so a node adds to the conversation by returning a list of new items.",
    notebook=NOTEBOOK,
)
def notify_appends_a_message(evidence: Evidence) -> Outcome:
    runs = [r for r in evidence.runs() if "notify" in evidence.nodes_started(r.run_id)]
    if not runs:
        return no("no run has run a node called `notify` yet")
    for run in reversed(runs):
        ran = evidence.nodes_started(run.run_id)
        if run.status != Status.COMPLETED:
            return no(where(evidence, run))
        at = ran.index("notify")
        if at == 0 or ran[at - 1] != "refund":
            return no(
                f"in run {run.run_id!r} the nodes ran in the order {names(ran)}",
                "An edge decides what runs next: `notify` should follow `refund`, and END "
                "should follow `notify`.",
            )
        before = next(c for c in evidence.checkpoints(run.run_id) if c.node == "notify")
        old = before.state.get("messages") or []
        new = evidence.state(run.run_id).get("messages") or []
        if len(new) <= len(old):
            return no(f"`notify` ran in run {run.run_id!r} but added no message")
        if new[: len(old)] != old:
            return no(f"`notify` ran in run {run.run_id!r} but the earlier messages are gone")
        return ok(
            f"run {run.run_id!r} ran {names(ran)}; `notify` added {len(new) - len(old)} "
            f"message(s) to the {len(old)} already there"
        )
    return no("no run has run `notify`")  # pragma: no cover - the loop always returns


@exercise(
    "01.3",
    "A router outcome that was never declared",
    hint="add_conditional_edge declares every outcome a router may return, so the drawing "
    "is exactly what can run. Return an outcome it does not list and run a big amount.",
    notebook=NOTEBOOK,
)
def undeclared_outcome_fails_the_run(evidence: Evidence) -> Outcome:
    runs = evidence.runs()
    if not runs:
        return no("no run is recorded yet")
    for run in reversed(runs):
        error = evidence.failure(run.run_id)
        if error and error.get("type") == "RoutingError":
            return ok(
                f"run {run.run_id!r} failed at `{run.node}` with RoutingError: "
                f"{str(error.get('message', ''))[:90]}"
            )
    return no(where(evidence, runs[-1]))
