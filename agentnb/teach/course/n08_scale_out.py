"""Notebook 08 · Scale out: a batch drained by workers, a rejection from the terminal, a run
handed from one worker to another.

The notebook's workflow (``notebooks/scale_out.py``) records in each run's state the process
id that ran ``planner`` (``planned_by``) and ``refund`` (``refunded_by``); these checkers
read those facts, the decision audit and the effect ledger.
"""

from __future__ import annotations

import os

from agentnb.store.records import Status
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "08-scale-out"
GRAPH = "refunds"
BATCH = 10


@exercise(
    "08.1",
    "Drain a batch of ten with two workers",
    hint="workflow.submit(state, run_id=f'batch-{i}') only queues a run; the workers "
    "(start_worker) claim and drive them, several at once, while this kernel waits.",
    notebook=NOTEBOOK,
)
def batch_drained(evidence: Evidence) -> Outcome:
    batch = [r for r in evidence.runs(GRAPH) if r.run_id.startswith("batch-")]
    if not batch:
        return no("no run with an id starting 'batch-' is recorded yet")
    done = [r for r in batch if r.status == Status.COMPLETED]
    if len(done) < BATCH:
        return no(f"{len(done)} of the {len(batch)} batch runs completed; the batch is ten")
    here = [r.run_id for r in done if evidence.state(r.run_id).get("planned_by") == os.getpid()]
    if here:
        return no(
            f"{here[0]!r} ran in this kernel (workflow.start(...).run()), not in a worker",
            "Queue the runs with workflow.submit and let worker processes drive them.",
        )
    twice = [r.run_id for r in done if len(evidence.effects(r.run_id)) != 1]
    if twice:
        return no(f"{twice[0]!r} does not have exactly one refund recorded")
    return ok(f"{len(done)} batch runs completed by worker processes, each refunded once")


@exercise(
    "08.2",
    "Reject a paused refund from the terminal, saying why",
    hint='A run above 500 waits before `human_approval`; `!agentnb reject RUN --db "$dsn" '
    "--as NAME --comment WHY` decides it from another process, and no worker refunds it.",
    notebook=NOTEBOOK,
)
def rejected_from_terminal(evidence: Evidence) -> Outcome:
    rejected = [r for r in evidence.runs(GRAPH) if r.status == Status.REJECTED]
    if not rejected:
        return no("no refund has been rejected yet")
    for run in reversed(rejected):
        paid = evidence.effects(run.run_id)
        ran = evidence.nodes_started(run.run_id)
        if paid or "refund" in ran:
            return no(f"run {run.run_id!r} was rejected, but `refund` ran and paid")
        said = [
            d
            for d in evidence.decisions(run.run_id)
            if d.accepted and d.decision == "rejected" and (d.comment or "").strip()
        ]
        if said:
            return ok(
                f"run {run.run_id!r} rejected by {said[-1].approver} ({said[-1].comment!r}); "
                "`refund` never ran"
            )
    return no(f"run {rejected[-1].run_id!r} was rejected without a comment saying why")


@exercise(
    "08.3",
    "Hand a run from one worker to another mid-run",
    hint="SIGTERM makes a worker finish the step in flight, commit it and put the run back "
    "in the queue (status `queued`); the next worker to start continues from there.",
    notebook=NOTEBOOK,
)
def handed_over(evidence: Evidence) -> Outcome:
    finished = [r for r in evidence.runs(GRAPH) if r.status == Status.COMPLETED]
    if not finished:
        return no("no refund has completed yet")
    for run in reversed(finished):
        state = evidence.state(run.run_id)
        planned, refunded = state.get("planned_by"), state.get("refunded_by")
        paused = any(e.type == "interrupted" for e in evidence.events(run.run_id))
        if planned is not None and refunded is not None and planned != refunded and not paused:
            if len(evidence.effects(run.run_id)) != 1:
                return no(f"run {run.run_id!r} changed hands but was not refunded exactly once")
            return ok(
                f"run {run.run_id!r} was planned by one worker process and refunded by "
                "another, once"
            )
    return no(
        "no completed refund changed workers mid-run: each was planned and refunded by one "
        "process, or changed hands only while it waited for a person"
    )
