"""The ``agentnb`` command's arguments: one sub-command per family of :mod:`agentnb.cli`."""

from __future__ import annotations

import argparse

from agentnb import __version__
from agentnb.cli._exits import text_arg
from agentnb.cli._stores import DB_HELP

__all__ = ["check_text", "command_line"]

PATHS = frozenset({"db", "file", "output", "target"})
"""The arguments that name files: a file name may be any bytes (checked when it is opened)."""
NAMES = {"by": "--as", "run": "the run id", "exercise": "the exercise id"}


def check_text(args: argparse.Namespace) -> None:
    """Refuse any argument but a path that is not UTF-8 text (:func:`text_arg`), before
    a command touches a database."""
    for dest, value in vars(args).items():
        if dest in PATHS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                text_arg(NAMES.get(dest, "--" + dest.replace("_", "-")), item)


def command_line() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentnb",
        description="See, step and approve agent workflows. Runs live in a SQLite file.",
    )
    parser.add_argument("--version", action="version", version=f"agentnb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    demo = sub.add_parser("demo", help="the refund scenario in the terminal")
    demo.add_argument("--db", help="keep the database here (default: a temporary file)")

    runs = sub.add_parser("runs", help="list runs")
    runs.add_argument("--db", required=True, help=DB_HELP)
    runs.add_argument("--status", help="only runs with this status")

    show = sub.add_parser("show", help="a run's status, events, state and decisions")
    show.add_argument("run", help="the run id")
    show.add_argument("--db", required=True, help=DB_HELP)
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
        cmd.add_argument("--db", required=True, help=DB_HELP)
        cmd.add_argument(
            "--as",
            dest="by",
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
        dest="by",
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
    prune.add_argument("--db", required=True, help=DB_HELP)
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
