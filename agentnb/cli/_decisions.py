"""``agentnb approve``, ``reject`` and ``respond``: decide a pause or answer a question, once."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from agentnb.cli._exits import OK, UsageError, json_arg
from agentnb.cli._stores import open_existing
from agentnb.cli._text import decider, describe_status, short
from agentnb.store.base import Checkpointer

__all__ = ["cmd_decide", "cmd_respond"]


def cmd_decide(args: argparse.Namespace, out: TextIO) -> int:
    decision = "approved" if args.command == "approve" else "rejected"
    update = getattr(args, "update", None)
    if update is not None and not args.workflow:
        raise UsageError(
            "an edit is merged by the workflow's reducers: name the workflow with "
            "--workflow MODULE:ATTR (its StateGraph or Workflow)"
        )
    with open_existing(args.db) as store:
        if getattr(args, "workflow", None):
            workflow = workflow_of(args.workflow, store)
            record = workflow.attach(args.run).decide(
                decision,
                by=args.by,
                comment=args.comment,
                expected_digest=args.digest,
                task=args.task,
                update=None if update is None else json_arg("--update", update),
            )
        else:
            record = store.decide(
                args.run,
                decision,
                args.by,
                comment=args.comment,
                expected_digest=args.digest,
                task=args.task,
            )
        run = store.get_run(args.run)
    out.write(
        f"{decision} run {record.run_id} at {record.node!r} (step {record.step}) "
        f"as {decider(record)}\n"
    )
    out.write(f"status: {describe_status(run)}\n")
    return OK


def workflow_of(target: str, store: Checkpointer) -> Any:
    """The workflow ``MODULE:ATTR`` names, bound to the command's database."""
    from agentnb.errors import DefinitionError
    from agentnb.graph.targets import bind_workflow
    from agentnb.graph.workflow import Workflow

    try:
        found = bind_workflow(target, store)
    except DefinitionError as exc:
        raise UsageError(exc.problem) from None
    if not isinstance(found, Workflow):
        raise UsageError(f"{target} is a {type(found).__name__}, not a StateGraph or Workflow")
    return found


def cmd_respond(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.graph.questions import respond

    value = json_arg("--value", args.value, "'\"yes\"' (a string is quoted twice)")
    with open_existing(args.db) as store:
        record = respond(
            store,
            args.run,
            value,
            by=args.by,
            comment=args.comment,
            task=args.task,
            expected_digest=args.digest,
        )
        run = store.get_run(args.run)
    out.write(
        f"answered run {record.run_id} at {record.node!r} (step {record.step}) with "
        f"{short(value)} as {decider(record)}\n"
    )
    out.write(f"status: {describe_status(run)}\n")
    return OK
