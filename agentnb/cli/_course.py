"""``agentnb demo`` and ``check``: the refund scenario in a terminal, a course exercise graded."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Sequence
from typing import Any, TextIO

from agentnb.cli._exits import OK, REFUSED, UsageError, existing_file, json_arg
from agentnb.cli._stores import shown
from agentnb.cli._text import print_event
from agentnb.errors import DecisionError
from agentnb.store.records import Event
from agentnb.store.sqlite import SqliteCheckpointer

__all__ = ["cmd_check", "cmd_demo"]


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.examples.refund import build_refund_workflow

    def say(text: str = "") -> None:
        out.write(text + "\n")
        out.flush()

    def show(events: Sequence[Event]) -> None:
        for event in events:
            print_event(event, out)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or os.path.join(tmp, "checkpoints.sqlite3")
        refunds: list[Any] = []
        say(f"agentnb demo — a refund that needs a human's approval (database: {shown(path)})\n")
        say("1. A worker starts a run for a refund of 1000 (above the 500 threshold):")
        store = SqliteCheckpointer(path)
        workflow = build_refund_workflow(store, refunds)
        events = list(workflow.stream({"requested": 1000, "messages": []}))
        show(events)
        run_id = events[-1].run_id
        run = store.get_run(run_id)
        say(f"   -> the run is {run.status}, paused before {run.node!r}; no refund yet: {refunds}")
        store.close()

        say("\n2. The worker stops. A new one opens the same database and rebuilds the graph;")
        say("   an approver approves (exactly once, bound to the state they saw):")
        store = SqliteCheckpointer(path)
        workflow = build_refund_workflow(store, refunds)
        digest = store.get_run(run_id).pending_digest
        show(
            list(
                workflow.resume(
                    run_id,
                    "approved",
                    by="demo-approver",
                    comment="amount checked",
                    expected_digest=digest,
                )
            )
        )
        say(f"   -> {store.get_run(run_id).status}; simulated refunds: {refunds}")

        say("\n3. The same approval arrives again (a double click, a retried callback):")
        try:
            store.decide(run_id, "approved", "demo-approver")
        except DecisionError as exc:
            say(f"   -> refused: {type(exc).__name__}: {exc}")

        say("\n4. Another refund of 900 is rejected: the refund node never runs:")
        second = workflow.start({"requested": 900, "messages": []})
        second.run()
        show(
            list(
                workflow.resume(
                    second.run_id, "rejected", by="demo-approver", comment="duplicate request"
                )
            )
        )
        say(f"   -> {second.status}; simulated refunds: {refunds}")

        say("\n5. The audit keeps every decision, refused attempts included:")
        for d in store.decisions():
            verdict = "accepted" if d.accepted else f"refused ({d.reason})"
            say(f"   {d.run_id[:12]} {d.decision:<8} by {d.approver}: {verdict}")
        store.close()
        say(f"\nSimulated refunds: {refunds}")
        if args.db:
            say(f"Inspect it: agentnb runs --db {shown(path)}")
    return OK


def cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.teach import exercises, grade

    if args.list:
        for found in exercises():
            out.write(f"{found.id}  {found.title}\n")
        return OK
    if not args.exercise or not args.db:
        raise UsageError("name an exercise and a database: agentnb check 02.1 --db FILE")
    answer = None if args.answer is None else json_arg("--answer", args.answer)
    existing_file("--db", args.db, f"no database at {args.db!r}")
    result = grade(args.exercise, db=args.db, answer=answer)
    out.write(f"{result}\n")
    return OK if result.passed else REFUSED
