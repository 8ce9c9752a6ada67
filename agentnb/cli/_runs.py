"""``agentnb runs``, ``show`` and ``prune``: list runs, one run in full, delete old ones."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from agentnb.cli._exits import OK, UsageError
from agentnb.cli._stores import open_existing, shown
from agentnb.cli._text import decider, describe_status, print_event, short
from agentnb.graph.questions import open_questions
from agentnb.store.records import RunRecord, Status

__all__ = ["cmd_prune", "cmd_runs", "cmd_show"]


def cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    if args.status is not None and args.status not in {s.value for s in Status}:
        raise UsageError(
            f"--status {args.status!r} is not a status; use one of "
            + ", ".join(s.value for s in Status)
        )
    with open_existing(args.db) as store:
        runs = store.list_runs(args.status)
    if not runs:
        out.write("no runs" + (f" with status {args.status}" if args.status else "") + "\n")
        return OK
    out.write(f"{'RUN':<34} {'GRAPH':<14} {'STATUS':<10} {'NODE':<18} STEP\n")
    for run, depth in tree(runs):
        # A subgraph's run (``parent/task@step``) is listed under its parent, indented.
        name = run.run_id if not depth else "  " * depth + "└ " + run.run_id.rsplit("/", 1)[1]
        out.write(
            f"{name:<34} {run.graph:<14} {run.status:<10} {run.node:<18} "
            f"{run.step}/{run.max_steps}\n"
        )
    return OK


def tree(runs: list[RunRecord]) -> list[tuple[RunRecord, int]]:
    """Runs in listing order, each followed by its subgraphs' runs (depth-first, oldest first)."""
    by_parent: dict[str, list[RunRecord]] = {}
    ids = {r.run_id for r in runs}
    roots = []
    for run in runs:
        parent = run.run_id.rpartition("/")[0]
        if parent in ids:
            by_parent.setdefault(parent, []).append(run)
        else:
            roots.append(run)
    ordered: list[tuple[RunRecord, int]] = []

    def visit(run: RunRecord, depth: int) -> None:
        ordered.append((run, depth))
        for child in sorted(by_parent.get(run.run_id, []), key=lambda r: r.created_at):
            visit(child, depth + 1)

    for root in roots:
        visit(root, 0)
    return ordered


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    with open_existing(args.db) as store:
        run = store.get_run(args.run)
        events = store.events(args.run)
        state = store.checkpoint(args.run).state
        decisions = store.decisions(args.run)
        policy = store.run_policy(args.run)
        questions = open_questions(store, run.run_id)
        held = store.pending_tasks(run.run_id)
        prefix = f"{run.run_id}/"
        children = [
            r
            for r in sorted(store.list_runs(), key=lambda r: r.created_at)
            if r.run_id.startswith(prefix) and "/" not in r.run_id[len(prefix) :]
        ]
    if args.json:
        json.dump(
            {
                "run_id": run.run_id,
                "graph": run.graph,
                "status": run.status.value,
                "node": run.node,
                "step": run.step,
                "pending_digest": run.pending_digest,
                "questions": questions,
                "children": [
                    {"run_id": c.run_id, "graph": c.graph, "status": c.status.value}
                    for c in children
                ],
                "held": [
                    {
                        "task": t.task_id,
                        "node": t.node,
                        "status": t.status,
                        "by": t.decided_by,
                        "digest": t.digest,
                        "update": t.update,
                    }
                    for t in held
                ],
                "started_by": None if policy.started_by is None else policy.started_by.to_json(),
                "approvers": {k: p.to_json() for k, p in policy.interrupts.items()},
                "decisions": [
                    {
                        "decision": d.decision,
                        "by": d.approver,
                        "identity": None if d.identity is None else d.identity.to_json(),
                        "accepted": d.accepted,
                        "reason": d.reason,
                        "comment": d.comment,
                        "at": d.at_iso,
                    }
                    for d in decisions
                ],
                "state": state,
                "events": [
                    {
                        "seq": e.seq,
                        "step": e.step,
                        "type": e.type,
                        "node": e.node,
                        "payload": e.payload,
                        "at": e.at_iso,
                    }
                    for e in events
                ],
            },
            out,
            ensure_ascii=False,
            indent=2,
        )
        out.write("\n")
        return OK
    out.write(f"run      {run.run_id}\ngraph    {run.graph}\n")
    status = describe_status(run)
    if questions:  # a question, not a yes/no: say what the run waits for
        many = f"{len(questions)} answers" if len(questions) > 1 else "an answer"
        status = f"pending: waiting for {many} (agentnb respond; the questions are below)"
    out.write(f"status   {status}\n")
    out.write(f"step     {run.step} of max {run.max_steps}, next node {run.node!r}\n")
    if policy.started_by is not None:
        out.write(f"started  by {policy.started_by}\n")
    for key, rule in sorted(policy.interrupts.items()):
        out.write(f"policy   {key}: {rule.describe()}\n")
    if run.pending_digest and run.status == Status.PENDING and not held:
        out.write(f"digest   {run.pending_digest}  (approve --digest binds to this state)\n")
    for t in held:
        who = f" by {t.decided_by}" if t.decided_by else ""
        edit = f", edit {short(t.update, 50)}" if t.update is not None else ""
        out.write(f"held     task {t.task_id!r} ({t.node}): {t.status}{who}{edit}")
        out.write(f"  digest {t.digest}\n" if t.status == "pending" else "\n")
    for child in children:
        out.write(f"subgraph {child.run_id} ({child.graph}): {describe_status(child)}\n")
    for q in questions:
        where = f"task {q['task']!r}" + (f" (in subgraph run {q['in']})" if "in" in q else "")
        out.write(f"question {where}: {q['question']}\n")
        out.write(f"  schema {json.dumps(q['schema'], ensure_ascii=False)}\n")
        db = shown(args.db)
        out.write(f"  answer agentnb respond {run.run_id} --db {db} --value JSON --as NAME")
        out.write(f" --task {q['task']}\n" if len(questions) > 1 else "\n")
    out.write("events\n   seq step  type          node               payload\n")
    for event in events:
        print_event(event, out)
    out.write("state\n")
    out.write("  " + json.dumps(state, ensure_ascii=False, indent=2).replace("\n", "\n  ") + "\n")
    if decisions:
        out.write("decisions\n")
        for d in decisions:
            verdict = "accepted" if d.accepted else f"refused ({d.reason})"
            note = f" — {d.comment}" if d.comment else ""
            out.write(f"  {d.at_iso} {d.decision} by {decider(d)}: {verdict}{note}\n")
    return OK


def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    import datetime as dt
    import time

    from agentnb.store.retention import parse_duration, prunable_statuses

    age = parse_duration(args.older_than)
    statuses = ", ".join(str(s) for s in prunable_statuses(args.status))
    before = time.time() - age
    try:
        when = dt.datetime.fromtimestamp(before, dt.UTC).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        raise UsageError(
            f"--older-than {args.older_than!r} reaches back before the first year a date can "
            "name: no run is that old; give a shorter age"
        ) from None
    with open_existing(args.db) as store:
        pruned = store.prune(before=before, status=args.status, include_audit=args.include_audit)
    if not pruned.runs:
        out.write(f"no runs ({statuses}) ended before {when}; nothing deleted\n")
        return OK
    plural = "s" if len(pruned.runs) != 1 else ""
    out.write(f"deleted {len(pruned.runs)} run{plural} ({statuses}) that ended before {when}\n")
    if args.include_audit:
        out.write(f"deleted their decision audit ({pruned.audit_rows} rows)\n")
    else:
        out.write("kept their decision audit (--include-audit deletes it too)\n")
    if pruned.space_returned:
        out.write(f"returned {pruned.freed_bytes / 2**20:.1f} MiB to the file system\n")
    else:
        out.write("another process held the file: the next prune returns the space\n")
    return OK
