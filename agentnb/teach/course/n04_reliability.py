"""Notebook 04 · Reliability: retried timeouts, a breaker's threshold, a killed worker."""

from __future__ import annotations

from agentnb.store.records import Status
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "04-reliability"


@exercise(
    "04.1",
    "Predict the events of a retried timeout",
    hint="Retry(attempts=n) allows n attempts in all, so n - 1 retries; each attempt that "
    "runs past timeout= records one `timeout` event.",
    notebook=NOTEBOOK,
)
def retried_timeout(evidence: Evidence) -> Outcome:
    answer = evidence.answer
    for run in reversed(evidence.runs()):
        kinds = [e.type for e in evidence.events(run.run_id)]
        if "timeout" not in kinds or "retry" not in kinds:
            continue
        counts = {"timeout": kinds.count("timeout"), "retry": kinds.count("retry")}
        if not isinstance(answer, dict):
            return no("no prediction given: pass answer={'timeout': <n>, 'retry': <n>}")
        if {k: answer.get(k) for k in counts} == counts:
            return ok(
                f"run {run.run_id!r} recorded {counts['timeout']} timeouts and "
                f"{counts['retry']} retries, as you predicted"
            )
        return no(
            f"run {run.run_id!r} recorded {counts['timeout']} timeout(s) and "
            f"{counts['retry']} retry(ies); you predicted {answer.get('timeout')!r} and "
            f"{answer.get('retry')!r}"
        )
    return no("no run has retried after a timeout yet")


@exercise(
    "04.2",
    "A breaker that opens after three failures",
    hint="CircuitBreaker(failures=n) opens after n failures in a row; then runs are refused "
    "fast (a `breaker_open` event) without calling the service.",
    notebook=NOTEBOOK,
)
def breaker_opens_after_three(evidence: Evidence) -> Outcome:
    streaks: list[tuple[str, int]] = []
    for graph in sorted({r.graph for r in evidence.runs()}):
        failures = 0
        for run in evidence.runs(graph):
            kinds = {e.type for e in evidence.events(run.run_id)}
            if "breaker_open" in kinds:
                if failures:
                    streaks.append((run.run_id, failures))
                failures = 0
            elif run.status == Status.FAILED:
                failures += 1
            else:
                failures = 0
    for run_id, failures in streaks:
        if failures == 3:
            return ok(f"three failed runs in a row, then run {run_id!r} was refused fast")
    if streaks:
        seen = ", ".join(str(n) for _, n in streaks)
        return no(f"the breaker opened after {seen} failure(s) in a row, not three")
    return no("no run has been refused by an open breaker yet")


@exercise(
    "04.3",
    "Kill a worker again, with a new run id",
    hint="ctx.once records a side effect's result in the store; a step re-run after a crash "
    "gets the recorded result back (`effect_replayed`) instead of doing it again.",
    notebook=NOTEBOOK,
)
def killed_worker_pays_once(evidence: Evidence) -> Outcome:
    survivors = []
    for run in evidence.runs():
        kinds = [e.type for e in evidence.events(run.run_id)]
        replayed = run.status == Status.COMPLETED and "effect_replayed" in kinds
        if replayed and len(evidence.effects(run.run_id)) == 1:
            survivors.append(run.run_id)
    needed = 1 if evidence.run_ids is not None else 2
    if len(survivors) >= needed:
        listed = ", ".join(repr(r) for r in survivors)
        return ok(f"{listed}: each completed after a killed attempt, with one effect recorded")
    return no(
        f"{len(survivors)} run(s) completed after a killed attempt; the exercise needs a "
        "second one with its own run id"
    )
