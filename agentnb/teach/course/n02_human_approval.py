"""Notebook 02 · Human approval: the history slider, a stale approval, a terminal decision."""

from __future__ import annotations

from typing import Any

from agentnb.store.records import Status
from agentnb.teach.course._facts import where
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "02-human-approval"


def _prediction(answer: Any) -> tuple[int, str] | None:
    if not isinstance(answer, dict):
        return None
    step, node = answer.get("step"), answer.get("next")
    if isinstance(step, bool) or not isinstance(step, int) or not isinstance(node, str):
        return None
    return step, node


@exercise(
    "02.1",
    "Predict, then drag the history slider",
    hint="Checkpoint k is the state after k nodes ran, with the node that runs next; a "
    "node's delta appears in the checkpoint after it. Drag the History slider of "
    "run.view() to see each one.",
    notebook=NOTEBOOK,
)
def predict_the_history(evidence: Evidence) -> Outcome:
    prediction = _prediction(evidence.answer)
    if prediction is None:
        return no("no prediction given: pass answer={'step': <int>, 'next': '<node>'}")
    runs = [
        r
        for r in evidence.runs()
        if any("approval_recorded" in c.state for c in evidence.checkpoints(r.run_id))
    ]
    if not runs:
        return no("no recorded run has `approval_recorded` in its state yet")
    run = runs[0]
    first = next(c for c in evidence.checkpoints(run.run_id) if "approval_recorded" in c.state)
    step, node = prediction
    if (step, node) == (first.step, first.node):
        return ok(
            f"in run {run.run_id!r}, `approval_recorded` appears at step {step}, "
            f"with `{node}` next — as you predicted"
        )
    return no(
        f"in run {run.run_id!r}, `approval_recorded` first appears at step {first.step}, "
        f"with `{first.node}` next; you predicted step {step}, next `{node}`"
    )


@exercise(
    "02.2",
    "A stale rejection, refused too",
    hint="A digest names one pending state of one run. Keep run.pending_digest at the first "
    "sign-off, let someone approve it and the run pause again, then reject with what you kept.",
    notebook=NOTEBOOK,
)
def stale_rejection_is_refused(evidence: Evidence) -> Outcome:
    refused: list[str] = []
    for run in reversed(evidence.runs()):
        audit = evidence.decisions(run.run_id)
        for i, attempt in enumerate(audit):
            if attempt.accepted or not (attempt.reason or "").startswith("stale"):
                continue
            seen = {d.pending_digest: d for d in audit[:i] if d.pending_digest}
            earlier = seen.get(attempt.digest_shown or "")
            if earlier is None:
                refused.append("made-up")
            elif attempt.decision != "rejected":
                refused.append(attempt.decision)
            else:
                return ok(
                    f"run {run.run_id!r}: a rejection with the digest shown at "
                    f"`{earlier.node}` (step {earlier.step}) was refused at `{attempt.node}` "
                    f"(step {attempt.step}) as stale"
                )
    if "made-up" in refused:
        return no(
            "a stale attempt is recorded, but its digest was never a pending state of that "
            "run: a made-up digest proves nothing",
            "Keep run.pending_digest while the run waits at its first sign-off.",
        )
    if refused:
        return no(
            "only stale approvals are recorded; the exercise asks whether a stale panel can reject"
        )
    return no("no stale attempt is recorded")


@exercise(
    "02.3",
    "Reject a run from the terminal",
    hint="`agentnb reject RUN --db FILE --as NAME --comment TEXT` records a decision in the "
    "same database the notebook uses; `agentnb show RUN --db FILE` prints the audit.",
    notebook=NOTEBOOK,
)
def reject_from_the_terminal(evidence: Evidence) -> Outcome:
    runs = [r for r in evidence.runs() if evidence.first_state(r.run_id).get("requested") == 2000]
    if not runs:
        return no("no run for 2,000 is recorded yet")
    run = runs[-1]
    if run.status != Status.REJECTED:
        return no(where(evidence, run))
    rejection = next(d for d in evidence.decisions(run.run_id) if d.accepted)
    if not rejection.comment:
        return no(
            f"run {run.run_id!r} was rejected by {rejection.approver}, without a comment",
            "The command takes --comment; the audit keeps it beside the approver's name.",
        )
    return ok(f"run {run.run_id!r} rejected by {rejection.approver}: {rejection.comment!r}")
