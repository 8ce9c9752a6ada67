"""Notebook 06 · Parallel branches, map-reduce, subgraphs and human input.

A superstep is recorded as the ``node_start`` events of one ``step`` (those of a ``Send`` task
carry its task id, ``summarise[0]``), each task's ``state_update`` with its delta and the node it
leads to (``END`` while a join still waits), and the checkpoint before it, whose ``tasks``
holds the fan-out and the sends. The checkers read those, the checkpoints' states and the
audit of answers, never the graph's code.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from agentnb.store.records import Event, Status
from agentnb.teach.course._facts import names
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "06-parallel-and-subgraphs"


def _supersteps(evidence: Evidence, run_id: str) -> dict[int, list[Event]]:
    """step -> the ``node_start`` events of the superstep that ran from that checkpoint."""
    found: dict[int, list[Event]] = defaultdict(list)
    for event in evidence.events(run_id):
        if event.type == "node_start" and event.node:
            found[event.step].append(event)
    return dict(found)


def _updates(evidence: Evidence, run_id: str, step: int) -> list[Event]:
    """The ``state_update`` events a superstep from checkpoint ``step`` committed."""
    return [e for e in evidence.events(run_id) if e.type == "state_update" and e.step == step + 1]


@exercise(
    "06.1",
    "Add a branch to the fan-out and join it",
    hint="An edge from `plan` to a new node adds a branch to the superstep; the join "
    "`add_edge([...], 'write')` must list every branch, or `write` runs without it (a branch "
    "that leads nowhere goes to `END`).",
    notebook=NOTEBOOK,
)
def branch_and_join(evidence: Evidence) -> Outcome:
    for run in reversed(evidence.runs()):
        steps = _supersteps(evidence, run.run_id)
        for step, starts in sorted(steps.items()):
            branches = sorted({e.node for e in starts if e.node})
            if len(branches) < 3:
                continue
            leads = {e.node: e.payload.get("next") for e in _updates(evidence, run.run_id, step)}
            joined = {leads.get(b) for b in branches}
            after = [e.node for e in steps.get(step + 1, []) if e.node]
            if len(joined) == 1 and None not in joined and "END" not in joined:
                join = str(joined.pop())
                runs_of_join = evidence.nodes_started(run.run_id).count(join)
                if after == [join] and runs_of_join == 1:
                    return ok(
                        f"run {run.run_id!r}: {names(branches)} ran in one superstep, and "
                        f"`{join}` ran once, after all of them"
                    )
                return no(
                    f"run {run.run_id!r}: {names(branches)} all lead to `{join}`, but it "
                    f"started {runs_of_join} time(s) and the next superstep ran {names(after)}"
                )
            return no(f"run {run.run_id!r}: " + _apart(branches, leads, after))
    return no("no run has a superstep of three branches or more")


def _apart(branches: list[str], leads: Mapping[str | None, Any], after: list[str]) -> str:
    """Why branches of one superstep did not meet at one join, in a sentence: where each
    branch's update said it leads (``END``: nowhere), and what ran next."""
    going: dict[str, list[str]] = defaultdict(list)
    for branch in branches:
        going[str(leads.get(branch) or "END")].append(branch)
    where = "; ".join(
        f"{names(b)} {'leads' if len(b) == 1 else 'lead'} "
        + ("nowhere (to `END`)" if to == "END" else f"to `{to}`")
        for to, b in sorted(going.items(), key=lambda kv: kv[0] == "END")
    )
    nowhere = going.get("END", [])
    told = (
        f"; {names(nowhere)} never reached the join, so `{after[0]}` ran without "
        f"{'it' if len(nowhere) == 1 else 'them'}"
        if nowhere and len(after) == 1
        else ""
    )
    return (
        f"{names(branches)} ran in one superstep, but they do not all lead to one join: "
        f"{where}{told}"
    )


@exercise(
    "06.2",
    "A Send map-reduce that sums counts",
    hint="Return one `Send('count', {'doc': d})` per document from the router; `count` "
    "returns `{'words': <its document's word count>}`, and `reducers={'words': operator.add}` "
    "adds the tasks' counts instead of refusing two writes to one key.",
    notebook=NOTEBOOK,
)
def map_reduce(evidence: Evidence) -> Outcome:
    runs = evidence.runs()
    for run in reversed(runs):
        for checkpoint in evidence.checkpoints(run.run_id):
            sends = (checkpoint.tasks or {}).get("sends") or []
            if len(sends) < 2:
                continue
            updates = [
                e for e in _updates(evidence, run.run_id, checkpoint.step) if "task" in e.payload
            ]
            if not updates and run.status == Status.FAILED:
                error = evidence.failure(run.run_id) or {}
                return no(
                    f"run {run.run_id!r} sent {len(sends)} tasks, and their superstep failed "
                    f"({error.get('type', '?')}): nothing of it was merged"
                )
            counts = _int_deltas(updates)
            if not counts:
                return no(
                    f"run {run.run_id!r} sent {len(sends)} tasks, but they returned no whole "
                    "number under one key"
                )
            key, values = max(counts.items(), key=lambda kv: len(kv[1]))
            if len(values) < 2:
                continue
            if len(values) != len(sends):
                return no(
                    f"run {run.run_id!r} sent {len(sends)} tasks, but only {len(values)} of "
                    f"them returned a count under `{key}`"
                )
            after = evidence.checkpoints(run.run_id)
            later = [c for c in after if c.step == checkpoint.step + 1]
            if not later:
                return no(
                    f"run {run.run_id!r}: the superstep of {len(sends)} sends never committed"
                )
            before = checkpoint.state.get(key, 0)
            merged = later[0].state.get(key)
            expected = (before if isinstance(before, int) else 0) + sum(values)
            if merged == expected:
                return ok(
                    f"run {run.run_id!r}: {len(values)} tasks sent `{key}` = "
                    f"{' + '.join(map(str, values))}, and the state holds {merged}"
                )
            return no(
                f"run {run.run_id!r}: {len(values)} tasks sent `{key}` = "
                f"{', '.join(map(str, values))}, but the merged state holds {merged!r}, not "
                f"their sum {expected}"
            )
    return no("no run sent a task per document with `Send` (two or more in one superstep)")


def _int_deltas(updates: list[Event]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = defaultdict(list)
    for event in updates:
        delta = event.payload.get("delta") or {}
        for key, value in delta.items():
            if isinstance(value, int) and not isinstance(value, bool):
                found[key].append(value)
    return dict(found)


def _form(question: Any) -> dict[str, Any] | None:
    """The question's schema when it is a form: an object with two fields or more."""
    schema = question.get("schema") if isinstance(question, dict) else None
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    fields = schema.get("properties")
    return schema if isinstance(fields, dict) and len(fields) >= 2 else None


@exercise(
    "06.3",
    "A form for a person to fill",
    hint="Ask with `ctx.interrupt({'question': ..., 'schema': {'type': 'object', "
    "'properties': {...two fields...}, 'required': [...]}})`: the panel draws a field per "
    "property. Answer it (the form, or `run.respond({...}, by=...)`) and run on to the end.",
    notebook=NOTEBOOK,
)
def form(evidence: Evidence) -> Outcome:
    asked = False
    for run in reversed(evidence.runs()):
        questions = [
            e
            for e in evidence.events(run.run_id)
            if e.type == "interrupted" and e.payload.get("when") == "input"
        ]
        forms = [(e, s) for e in questions if (s := _form(e.payload.get("question")))]
        asked = asked or bool(questions)
        if not forms:
            continue
        event, schema = forms[-1]
        answers = [
            d
            for d in evidence.decisions(run.run_id)
            if d.accepted and d.edit and isinstance(d.edit.get("answer"), dict)
        ]
        if not answers:
            return no(f"run {run.run_id!r} asks `{event.node}`'s form; no answer is recorded yet")
        answer = answers[-1].edit["answer"]  # type: ignore[index]
        required = [str(f) for f in schema.get("required", [])]
        if not required:
            return no(
                f"run {run.run_id!r}: `{event.node}`'s form requires no field, so an empty "
                "answer would do",
                "List the fields a person must fill in the schema's `required`.",
            )
        if run.status != Status.COMPLETED:
            return no(
                f"run {run.run_id!r}: {answers[-1].approver} answered {answer}, but the run is "
                f"{run.status.value}",
                "Run it on after the answer: the node re-runs and gets it from `ctx.interrupt`.",
            )
        return ok(
            f"run {run.run_id!r}: `{event.node}` asked for {names(sorted(schema['properties']))}; "
            f"{answers[-1].approver} answered {answer}, and the run completed"
        )
    if asked:
        return no("a node asked a question, but its schema is not an object with two fields")
    return no("no node asked a question with `ctx.interrupt`")


@exercise(
    "06.4",
    "Predict, then click: which nodes light in each superstep",
    hint="A superstep runs every node the previous one triggered; a join waits until all of "
    "its sources have run, so a short branch's node is not run again while a longer one "
    "catches up. Step the panel and watch which nodes light together.",
    notebook=NOTEBOOK,
)
def predict_supersteps(evidence: Evidence) -> Outcome:
    answer = evidence.answer
    if not isinstance(answer, list) or not all(isinstance(s, list | tuple) for s in answer):
        return no("no prediction given: pass answer=[[<nodes of superstep 1>], [...], ...]")
    runs = [r for r in evidence.runs() if r.status == Status.COMPLETED]
    if not runs:
        return no(
            "no completed run is recorded",
            "Click Step on the panel until the run completes, then check.",
        )
    run = runs[-1]
    recorded = [
        sorted({e.node for e in starts if e.node})
        for _, starts in sorted(_supersteps(evidence, run.run_id).items())
    ]
    predicted = [sorted(str(n) for n in s) for s in answer]
    if predicted == recorded:
        return ok(f"run {run.run_id!r} ran {_show(recorded)}, as you predicted")
    first = next(
        (i for i, (p, r) in enumerate(zip(predicted, recorded, strict=False)) if p != r),
        min(len(predicted), len(recorded)),
    )
    if first >= len(recorded):
        differs = (
            f"you predicted {len(predicted)} supersteps; superstep {first + 1} on "
            f"({_show(predicted[first:])}) never ran"
        )
    elif first >= len(predicted):
        differs = (
            f"you predicted {len(predicted)} supersteps; the run went on with "
            f"{_show(recorded[first:])}"
        )
    else:
        differs = (
            f"superstep {first + 1} ran {_show([recorded[first]])}, "
            f"you predicted {_show([predicted[first]])}"
        )
    return no(f"run {run.run_id!r} ran {_show(recorded)}: {differs}")


def _show(steps: list[list[str]]) -> str:
    return " → ".join("{" + ", ".join(s) + "}" for s in steps)
