"""Notebook 05 · Observability: questions about the refund desk, answered from the log."""

from __future__ import annotations

from agentnb.store.records import Status
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "05-observability"


@exercise(
    "05.1",
    "Which customer's refund failed, at which attempt?",
    hint="A run's first state holds its input; a `retry` event is one failed attempt that "
    "was tried again, and the `failed` event ends the last one.",
    notebook=NOTEBOOK,
)
def which_run_failed(evidence: Evidence) -> Outcome:
    failed = [r for r in evidence.runs() if r.status == Status.FAILED]
    if not failed:
        return no("no run has failed")
    answer = evidence.answer
    if not isinstance(answer, dict):
        return no("no answer given: pass answer={'customer': '<name>', 'attempt': <n>}")
    for run in failed:
        customer = evidence.first_state(run.run_id).get("customer")
        attempts = sum(e.type == "retry" for e in evidence.events(run.run_id)) + 1
        if answer.get("customer") == customer:
            if answer.get("attempt") == attempts:
                return ok(f"run {run.run_id!r} ({customer}) failed at attempt {attempts}")
            return no(f"right run ({customer}); the attempt number is not the recorded one")
    return no(f"{answer.get('customer')!r} is not the customer of a failed run")


@exercise(
    "05.2",
    "A timeout on `draft_reply`",
    hint="timeout= on add_node cancels an attempt that runs too long and records a "
    "`timeout` event; without a retry policy the run fails.",
    notebook=NOTEBOOK,
)
def draft_reply_times_out(evidence: Evidence) -> Outcome:
    for run in reversed(evidence.runs()):
        events = evidence.events(run.run_id)
        if any(e.type == "timeout" and e.node == "draft_reply" for e in events):
            error = evidence.failure(run.run_id) or {}
            return ok(
                f"`draft_reply` timed out in run {run.run_id!r}; the run is {run.status.value}"
                + (f" ({error.get('type')})" if error else "")
            )
    return no("no run recorded a `timeout` event at `draft_reply`")


@exercise(
    "05.3",
    "Decide every pending refund, with a comment",
    hint="workflow.runs('pending') lists the runs waiting for a decision; approve or reject "
    "each with comment=..., and the audit keeps it.",
    notebook=NOTEBOOK,
)
def decide_every_pending_refund(evidence: Evidence) -> Outcome:
    runs = evidence.runs()
    if not runs:
        return no("no run is recorded yet")
    pending = [r.run_id for r in runs if r.status == Status.PENDING]
    if pending:
        return no(f"{len(pending)} run(s) still wait for a decision: {', '.join(pending)}")
    commented = [d for d in evidence.decisions() if d.accepted and d.comment]
    if len(commented) < 2:
        return no(
            f"no run is pending, but only {len(commented)} decision(s) carry a comment",
            "Decide each pending run with comment=... so the audit says why.",
        )
    return ok(f"no run is pending; {len(commented)} decisions carry a comment")
