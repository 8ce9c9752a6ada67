"""Notebook 09 · The agent loop: a runaway loop, a refused tool, a tool that pays once."""

from __future__ import annotations

from agentnb.store.records import Status
from agentnb.teach.course._facts import rejected_before_running, where
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "09-agent-loop"


@exercise(
    "09.1",
    "A runaway loop, stopped by the step budget",
    hint="compile(..., max_steps=n) bounds how many nodes a run may execute; a model that "
    "always asks for another tool call loops until the budget ends the run.",
    notebook=NOTEBOOK,
)
def runaway_loop(evidence: Evidence) -> Outcome:
    runs = evidence.runs()
    for run in reversed(runs):
        error = evidence.failure(run.run_id)
        if error and error.get("type") == "StepBudgetExhausted":
            return ok(f"run {run.run_id!r} was stopped after {run.step} steps by its budget")
    return no(where(evidence, runs[-1]) if runs else "no run is recorded yet")


@exercise(
    "09.2",
    "Refuse the dangerous tool",
    hint="An interrupt before the tool node pauses the run with the model's request in the "
    "state; rejecting it ends the run before the tool runs.",
    notebook=NOTEBOOK,
)
def refuse_the_dangerous_tool(evidence: Evidence) -> Outcome:
    return rejected_before_running(evidence)


@exercise(
    "09.3",
    "A tool retried after paying pays once",
    hint="ctx.once(name, fn) records fn's result under the step's idempotency key; when the "
    "same step runs again (a retry), it returns the record instead of calling fn.",
    notebook=NOTEBOOK,
)
def retried_tool_pays_once(evidence: Evidence) -> Outcome:
    for run in reversed(evidence.runs()):
        kinds = [e.type for e in evidence.events(run.run_id)]
        if "retry" not in kinds:
            continue
        if run.status != Status.COMPLETED:
            return no(where(evidence, run))
        effects = evidence.effects(run.run_id)
        if "effect_replayed" in kinds and effects:
            return ok(
                f"run {run.run_id!r} retried a tool, {len(effects)} effect(s) recorded, "
                "and the retry replayed the recorded result"
            )
        return no(
            f"run {run.run_id!r} retried, but no recorded effect was replayed",
            "Do the payment through ctx.once, then fail after it so the retry runs it again.",
        )
    return no("no run has retried a node yet")
