"""The capstone: a workflow of your own, with routing, an approval and a side effect."""

from __future__ import annotations

from agentnb.store.records import Status
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "capstone"
TAUGHT = {"refund", "refund_desk", "agent"}


@exercise(
    "10.1",
    "Capstone: a workflow of your own",
    hint="One graph (not the course's refund, refund desk or agent) needs: a router with a short "
    "path that completes without a decision, an interrupt that one run passes by approval "
    "and whose node does a side effect through ctx.once, and one run rejected there.",
    notebook=NOTEBOOK,
)
def capstone(evidence: Evidence) -> Outcome:
    graphs = sorted({r.graph for r in evidence.runs()} - TAUGHT)
    if not graphs:
        return no("no run of a workflow of your own is recorded yet")
    missing: dict[str, list[str]] = {}
    for graph in graphs:
        short = approved = rejected = False
        for run in evidence.runs(graph):
            audit = [d for d in evidence.decisions(run.run_id) if d.accepted]
            effects = evidence.effects(run.run_id)
            if run.status == Status.COMPLETED and not audit:
                short = True
            if run.status == Status.COMPLETED and audit and effects:
                approved = True
            if run.status == Status.REJECTED and not effects:
                rejected = True
        lacking = [
            what
            for what, done in (
                ("a run that completes without a decision", short),
                ("an approved run with a side effect", approved),
                ("a rejected run with none", rejected),
            )
            if not done
        ]
        if not lacking:
            return ok(
                f"`{graph}`: a short path, an approved run with a recorded side effect, "
                "and a rejected run without one"
            )
        missing[graph] = lacking
    graph, lacking = next(iter(missing.items()))
    return no(f"`{graph}` still lacks " + "; ".join(lacking))
