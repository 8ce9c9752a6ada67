"""How the commands print a run: its status in words, an event as one line, a value cut short."""

from __future__ import annotations

import json
from typing import Any, TextIO

from agentnb.store.records import Decision, Event, RunRecord, Status

__all__ = ["decider", "describe_status", "print_event", "short"]


def short(value: Any, width: int = 70) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_status(run: RunRecord) -> str:
    if run.status == Status.PENDING:
        return f"pending: waiting for a decision before {run.node!r}"
    if run.status == Status.APPROVED:
        who = f" by {run.decided_by}" if run.decided_by else ""
        if run.lease_owner:
            return f"approved{who}; being continued by worker {run.lease_owner}"
        return (
            f"approved{who}; waiting for a worker with the workflow code to continue it "
            f"(workflow.attach({run.run_id!r}).run())"
        )
    if run.status == Status.RUNNING:
        if run.lease_owner:
            return f"running: worker {run.lease_owner} is executing {run.node!r}"
        return f"running: idle before {run.node!r} (step it with run.step() or run.run())"
    if run.status == Status.QUEUED:
        return (
            "queued: waiting for a worker to claim it "
            "(agentnb worker --db PATH --workflow MODULE:ATTR)"
        )
    if run.status == Status.FAILED and run.error:
        return f"failed: {run.error.get('type')}: {run.error.get('message')}"
    return str(run.status)


def print_event(event: Event, out: TextIO) -> None:
    payload = {k: v for k, v in event.payload.items() if k not in ("state",)}
    node = event.node or ""
    out.write(f"  {event.seq:>4} {event.step:>4}  {event.type:<13} {node:<18} {short(payload)}\n")


def decider(d: Decision) -> str:
    """The name given and, beside it, who the deciding process vouched for."""
    if d.identity is None:  # decided before agentnb recorded identities
        return d.approver
    return f"{d.approver} (identity {d.identity})"
