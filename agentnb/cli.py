"""The ``agentnb`` command: parse, call the public API, print.

Exit codes: 0 done, 1 refused (the request was understood but not allowed: already decided,
stale, not an allowed approver, a policy only the workflow's code can check, unknown
run), 2 usage (bad arguments, no such database). A user mistake never
prints a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from agentnb import __version__
from agentnb.errors import AgentnbError, DecisionError, RunError, StoreError
from agentnb.graph.questions import open_questions
from agentnb.store.base import Checkpointer
from agentnb.store.records import Decision, Event, RunRecord, Status
from agentnb.store.sqlite import SqliteCheckpointer

__all__ = ["main"]

OK, REFUSED, USAGE = 0, 1, 2
_DB_HELP = "the SQLite checkpoint file, or a postgresql://USER:PASSWORD@HOST/DB URL"


class _UsageError(Exception):
    pass


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


WORKER_CONNECTIONS = 4
"""The most PostgreSQL connections one ``agentnb worker`` pools (fewer if --concurrency is)."""


def _open_store(db: str, *, connections: int = 1) -> Checkpointer:
    """A ``postgresql://`` URL's server (through a pool of ``connections``), or the SQLite
    file at ``db`` (created if missing)."""
    if db.startswith(POSTGRES_SCHEMES):
        from agentnb.store.postgres import PostgresCheckpointer

        return PostgresCheckpointer(db, connections=connections)
    return SqliteCheckpointer(db)


def _shown(db: str) -> str:
    """``--db`` as it may be printed: a PostgreSQL URL without its password."""
    if db.startswith(POSTGRES_SCHEMES):
        from agentnb.store.postgres_session import masked

        return masked(db)
    return db


def _open_existing(path: str) -> Checkpointer:
    if path.startswith(POSTGRES_SCHEMES):
        return _open_store(path)
    if not Path(path).is_file():
        raise _UsageError(
            f"no database at {path!r} (check --db; runs are saved where the "
            "workflow's SqliteCheckpointer points)"
        )
    return SqliteCheckpointer(path)


def _short(value: Any, width: int = 70) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def _describe_status(run: RunRecord) -> str:
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


def _print_event(event: Event, out: TextIO) -> None:
    payload = {k: v for k, v in event.payload.items() if k not in ("state",)}
    node = event.node or ""
    out.write(f"  {event.seq:>4} {event.step:>4}  {event.type:<13} {node:<18} {_short(payload)}\n")


# -- commands ---------------------------------------------------------------------------


def _cmd_runs(args: argparse.Namespace, out: TextIO) -> int:
    if args.status is not None and args.status not in {s.value for s in Status}:
        raise _UsageError(
            f"--status {args.status!r} is not a status; use one of "
            + ", ".join(s.value for s in Status)
        )
    with _open_existing(args.db) as store:
        runs = store.list_runs(args.status)
    if not runs:
        out.write("no runs" + (f" with status {args.status}" if args.status else "") + "\n")
        return OK
    out.write(f"{'RUN':<34} {'GRAPH':<14} {'STATUS':<10} {'NODE':<18} STEP\n")
    for run, depth in _tree(runs):
        # A subgraph's run (``parent/task@step``) is listed under its parent, indented.
        name = run.run_id if not depth else "  " * depth + "└ " + run.run_id.rsplit("/", 1)[1]
        out.write(
            f"{name:<34} {run.graph:<14} {run.status:<10} {run.node:<18} "
            f"{run.step}/{run.max_steps}\n"
        )
    return OK


def _tree(runs: list[RunRecord]) -> list[tuple[RunRecord, int]]:
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


def _cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    with _open_existing(args.db) as store:
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
    status = _describe_status(run)
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
        edit = f", edit {_short(t.update, 50)}" if t.update is not None else ""
        out.write(f"held     task {t.task_id!r} ({t.node}): {t.status}{who}{edit}")
        out.write(f"  digest {t.digest}\n" if t.status == "pending" else "\n")
    for child in children:
        out.write(f"subgraph {child.run_id} ({child.graph}): {_describe_status(child)}\n")
    for q in questions:
        where = f"task {q['task']!r}" + (f" (in subgraph run {q['in']})" if "in" in q else "")
        out.write(f"question {where}: {q['question']}\n")
        out.write(f"  schema {json.dumps(q['schema'], ensure_ascii=False)}\n")
        db = _shown(args.db)
        out.write(f"  answer agentnb respond {run.run_id} --db {db} --value JSON --as NAME")
        out.write(f" --task {q['task']}\n" if len(questions) > 1 else "\n")
    out.write("events\n   seq step  type          node               payload\n")
    for event in events:
        _print_event(event, out)
    out.write("state\n")
    out.write("  " + json.dumps(state, ensure_ascii=False, indent=2).replace("\n", "\n  ") + "\n")
    if decisions:
        out.write("decisions\n")
        for d in decisions:
            verdict = "accepted" if d.accepted else f"refused ({d.reason})"
            note = f" — {d.comment}" if d.comment else ""
            out.write(f"  {d.at_iso} {d.decision} by {_decider(d)}: {verdict}{note}\n")
    return OK


def _decider(d: Decision) -> str:
    """The name given and, beside it, who the deciding process vouched for."""
    if d.identity is None:  # decided before agentnb recorded identities
        return d.approver
    return f"{d.approver} (identity {d.identity})"


def _cmd_decide(args: argparse.Namespace, out: TextIO) -> int:
    decision = "approved" if args.command == "approve" else "rejected"
    update = getattr(args, "update", None)
    if update is not None and not args.workflow:
        raise _UsageError(
            "an edit is merged by the workflow's reducers: name the workflow with "
            "--workflow MODULE:ATTR (its StateGraph or Workflow)"
        )
    with _open_existing(args.db) as store:
        if getattr(args, "workflow", None):
            workflow = _workflow(args.workflow, store)
            record = workflow.attach(args.run).decide(
                decision,
                by=args.approver,
                comment=args.comment,
                expected_digest=args.digest,
                task=args.task,
                update=None if update is None else _json_arg("--update", update),
            )
        else:
            record = store.decide(
                args.run,
                decision,
                args.approver,
                comment=args.comment,
                expected_digest=args.digest,
                task=args.task,
            )
        run = store.get_run(args.run)
    out.write(
        f"{decision} run {record.run_id} at {record.node!r} (step {record.step}) "
        f"as {_decider(record)}\n"
    )
    out.write(f"status: {_describe_status(run)}\n")
    return OK


def _json_arg(flag: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _UsageError(f"{flag} is not JSON ({exc.msg}); quote it: {flag} '{{...}}'") from None


def _workflow(target: str, store: Checkpointer) -> Any:
    """The workflow ``MODULE:ATTR`` names, bound to the command's database."""
    from agentnb.graph import StateGraph, Workflow
    from agentnb.render.export import TargetError, import_target

    try:
        found = import_target(target)
    except TargetError as exc:
        raise _UsageError(str(exc)) from None
    graph = found.graph if isinstance(found, Workflow) else found
    if not isinstance(graph, StateGraph):
        raise _UsageError(f"{target} is a {type(found).__name__}, not a StateGraph or Workflow")
    return graph.compile(store)


def _cmd_respond(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.graph.questions import respond

    try:
        value = json.loads(args.value)
    except json.JSONDecodeError as exc:
        raise _UsageError(
            f"--value is not JSON ({exc.msg}); a string is quoted twice: --value '\"yes\"'"
        ) from None
    with _open_existing(args.db) as store:
        record = respond(
            store,
            args.run,
            value,
            by=args.approver,
            comment=args.comment,
            task=args.task,
            expected_digest=args.digest,
        )
        run = store.get_run(args.run)
    out.write(
        f"answered run {record.run_id} at {record.node!r} (step {record.step}) with "
        f"{_short(value)} as {_decider(record)}\n"
    )
    out.write(f"status: {_describe_status(run)}\n")
    return OK


def _cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    import datetime as dt
    import time

    from agentnb.store.retention import parse_duration, prunable_statuses

    age = parse_duration(args.older_than)
    statuses = ", ".join(str(s) for s in prunable_statuses(args.status))
    before = time.time() - age
    with _open_existing(args.db) as store:
        pruned = store.prune(before=before, status=args.status, include_audit=args.include_audit)
    when = dt.datetime.fromtimestamp(before, dt.UTC).isoformat(timespec="seconds")
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


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.examples.refund import build_refund_workflow

    def say(text: str = "") -> None:
        out.write(text + "\n")
        out.flush()

    def show(events: Sequence[Event]) -> None:
        for event in events:
            _print_event(event, out)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or os.path.join(tmp, "checkpoints.sqlite3")
        refunds: list[Any] = []
        say(f"agentnb demo — a refund that needs a human's approval (database: {path})\n")
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
                    approver="demo-approver",
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
                    second.run_id, "rejected", approver="demo-approver", comment="duplicate request"
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
            say(f"Inspect it: agentnb runs --db {path}")
    return OK


# -- entry point ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentnb",
        description="See, step and approve agent workflows. Runs live in a SQLite file.",
    )
    parser.add_argument("--version", action="version", version=f"agentnb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser("demo", help="the refund scenario in the terminal")
    demo.add_argument("--db", help="keep the database here (default: a temporary file)")

    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--db", required=True, help=_DB_HELP)
    runs.add_argument("--status", help="only runs with this status")

    show = sub.add_parser("show", help="a run's status, events, state and decisions")
    show.add_argument("run", help="the run id")
    show.add_argument("--db", required=True, help=_DB_HELP)
    show.add_argument("--json", action="store_true", help="print JSON")

    validate = sub.add_parser("validate", help="check a workflow or state-machine JSON/YAML file")
    validate.add_argument("file", help="the definition file (.json, .yaml, .yml)")

    draw = sub.add_parser("draw", help="draw a workflow or state machine to .svg/.png/.pdf/.dot")
    draw.add_argument(
        "target",
        help="MODULE:ATTR naming a StateGraph, Workflow or StateMachine, or a machine "
        "definition file (.json, .yaml, .yml)",
    )
    draw.add_argument("-o", "--output", required=True, help="the file to write ('-': DOT)")
    draw.add_argument("--direction", choices=("LR", "TB"), default="LR")

    for name, verb in (("approve", "approve"), ("reject", "reject")):
        cmd = sub.add_parser(name, help=f"{verb} a pending run (decided once, audited)")
        cmd.add_argument("run", help="the run id")
        cmd.add_argument("--db", required=True, help=_DB_HELP)
        cmd.add_argument(
            "--as",
            dest="approver",
            required=True,
            help="your name for the audit (an approver policy checks the identity this "
            "process runs as: JUPYTERHUB_USER, else the OS user)",
        )
        cmd.add_argument("--comment", help="why")
        cmd.add_argument("--digest", help="refuse if the pending state is not this one")
        cmd.add_argument("--task", help="which held task (when a superstep holds several)")
        cmd.add_argument(
            "--workflow",
            metavar="MODULE:ATTR",
            help="the run's StateGraph or Workflow: its reducers merge --update, and its "
            "approver functions are checked",
        )
        if name == "approve":
            cmd.add_argument(
                "--update",
                metavar="JSON",
                help="approve with edits: state keys to change, merged by the reducers "
                "(needs --workflow)",
            )

    respond = sub.add_parser(
        "respond",
        help="answer the question a paused run asks (ctx.interrupt): checked against its "
        "schema, recorded once, audited",
    )
    respond.add_argument("run", help="the run id")
    respond.add_argument("--db", required=True, help="the SQLite checkpoint file")
    respond.add_argument(
        "--value", required=True, metavar="JSON", help="the answer, as JSON: 3, '\"yes\"', '{...}'"
    )
    respond.add_argument(
        "--as",
        "--by",
        dest="approver",
        metavar="NAME",
        required=True,
        help="your name for the audit (the identity this process runs as is recorded beside it)",
    )
    respond.add_argument("--task", help="which held task's question (when several wait)")
    respond.add_argument("--comment", help="why")
    respond.add_argument("--digest", help="refuse if the question's state is not this one")

    prune = sub.add_parser(
        "prune",
        help="delete old finished runs (never running or pending ones); keep the audit",
        description="Delete the runs that ended more than --older-than ago: their "
        "checkpoints, events, policies and effect ledger. Running, pending and approved "
        "runs are never deleted; state-machine instances are left alone. The decision "
        "audit stays unless --include-audit. The space is returned to the file system.",
    )
    prune.add_argument("--db", required=True, help=_DB_HELP)
    prune.add_argument(
        "--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 1w (s m h d w)"
    )
    prune.add_argument(
        "--status", help="only this status: completed, rejected, failed or cancelled"
    )
    prune.add_argument(
        "--include-audit", action="store_true", help="delete the runs' decision audit too"
    )

    worker = sub.add_parser(
        "worker",
        help="claim and drive queued, approved and orphaned runs (workflow.submit)",
        description="Claim runnable runs of the named workflows from the database and drive "
        "them, --concurrency at once on one event loop: runs queued by workflow.submit, runs "
        "approved or answered from anywhere, runs whose worker died (lease expired). Start "
        "as many as you like, here or on other machines. SIGTERM or Ctrl-C: each run "
        "finishes its step in flight and goes back to the queue; exit 0.",
    )
    worker.add_argument("--db", required=True, help="the SQLite checkpoint file")
    worker.add_argument(
        "--workflow",
        required=True,
        action="append",
        metavar="MODULE:ATTR",
        help="a StateGraph, Workflow, build(store) function or Statechart (its timers); "
        "repeat for several",
    )
    worker.add_argument("--concurrency", type=int, default=16, help="runs driven at once")
    worker.add_argument(
        "--until-idle", action="store_true", help="exit once nothing is left to claim"
    )

    check = sub.add_parser("check", help="grade a course exercise from a database")
    check.add_argument("exercise", nargs="?", help="the exercise id, e.g. 02.1")
    check.add_argument("--db", help="the SQLite file to grade (a submission)")
    check.add_argument("--answer", help="the prediction the exercise asks for, as JSON")
    check.add_argument("--list", action="store_true", help="list the exercises")
    return parser


def _cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.errors import DefinitionError
    from agentnb.graph.targets import load_workflow
    from agentnb.graph.worker import Worker
    from agentnb.graph.workflow import Workflow

    if args.concurrency < 1:
        raise _UsageError(f"--concurrency must be 1 or more, not {args.concurrency}")
    # Its runs' commits overlap on a few pooled connections (PostgreSQL; docs/postgres.md).
    with _open_store(args.db, connections=min(args.concurrency, WORKER_CONNECTIONS)) as store:
        try:
            loaded = [load_workflow(target, store) for target in args.workflow]
            workflows = [w for w in loaded if isinstance(w, Workflow)]
            charts = [c for c in loaded if not isinstance(c, Workflow)]
            worker = Worker(*workflows, machines=charts, store=store, concurrency=args.concurrency)
        except DefinitionError as exc:
            raise _UsageError(str(exc)) from None
        names = ", ".join([*worker.workflows, *worker.machines])
        out.write(
            f"worker {worker.owner}: {names} on {_shown(args.db)}, {args.concurrency} at once "
            f"({'until idle' if args.until_idle else 'SIGTERM or Ctrl-C stops it'})\n"
        )
        out.flush()
        # What the worker notices (a failed run, a lease lost, stopping) goes to stderr.
        logger = logging.getLogger("agentnb.worker")
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        try:
            stats = worker.run(until_idle=args.until_idle, signals=True)
        finally:
            logger.removeHandler(handler)
    out.write(
        f"stopped: {stats.claimed} claimed, {stats.completed} completed, {stats.paused} "
        f"paused, {stats.failed} failed, {stats.requeued} requeued, {stats.lost} lost\n"
    )
    return OK


def _cmd_check(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.teach import exercises, grade

    if args.list:
        for found in exercises():
            out.write(f"{found.id}  {found.title}\n")
        return OK
    if not args.exercise or not args.db:
        raise _UsageError("name an exercise and a database: agentnb check 02.1 --db FILE")
    try:
        answer = None if args.answer is None else json.loads(args.answer)
    except json.JSONDecodeError as exc:
        raise _UsageError(
            f"--answer is not JSON ({exc.msg}); quote it: --answer '{{...}}'"
        ) from None
    if not Path(args.db).is_file():
        raise _UsageError(f"no database at {args.db!r}")
    result = grade(args.exercise, db=args.db, answer=answer)
    out.write(f"{result}\n")
    return OK if result.passed else REFUSED


def _cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.fsm.loader import validate_file
    from agentnb.graph.loader import definition_file_kind, validate_workflow_file

    path = Path(args.file)
    if not path.is_file():
        raise _UsageError(f"no file at {args.file!r}")
    workflow = definition_file_kind(path) == "workflow"
    problems = validate_workflow_file(path) if workflow else validate_file(path)
    if not problems:
        out.write(f"{path}: valid\n")
        return OK
    out.write(f"{path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
    for problem in problems:
        out.write(f"  {problem}\n")
    return REFUSED


def _cmd_draw(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.render.export import cli_draw

    return cli_draw(args.target, args.output, direction=args.direction, stdout=out)


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "check": _cmd_check,
    "demo": _cmd_demo,
    "draw": _cmd_draw,
    "validate": _cmd_validate,
    "prune": _cmd_prune,
    "runs": _cmd_runs,
    "show": _cmd_show,
    "worker": _cmd_worker,
    "approve": _cmd_decide,
    "reject": _cmd_decide,
    "respond": _cmd_respond,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    out = out or sys.stdout
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage message
        return int(exc.code or 0)
    try:
        return COMMANDS[args.command](args, out)
    except _UsageError as exc:
        sys.stderr.write(f"agentnb {args.command}: {exc}\n")
        return USAGE
    except (DecisionError, RunError) as exc:
        sys.stderr.write(f"agentnb {args.command}: refused: {exc}\n")
        return REFUSED
    except StoreError as exc:
        sys.stderr.write(f"agentnb {args.command}: {exc}\n")
        return USAGE
    except AgentnbError as exc:
        sys.stderr.write(f"agentnb {args.command}: {type(exc).__name__}: {exc}\n")
        return REFUSED
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:  # `agentnb show ... | head -1`: the reader left, nothing is wrong
        if out is sys.stdout:  # keep the interpreter's own flush at exit from raising again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
