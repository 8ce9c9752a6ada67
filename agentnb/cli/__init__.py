"""The ``agentnb`` command: parse, call the public API, print.

Exit codes: 0 done, 1 refused (the request was understood but not allowed: already decided,
stale, not an allowed approver, a policy only the workflow's code can check, unknown
run), 2 usage (bad arguments, no such database). A user mistake never
prints a traceback.

One module per family of commands: ``_runs`` (runs, show, prune), ``_decisions`` (approve,
reject, respond), ``_worker``, ``_definitions`` (validate, draw), ``_course`` (demo, check);
``_parser`` declares them all, ``_stores`` opens ``--db``, ``_text`` prints a run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from agentnb.cli._course import cmd_check, cmd_demo
from agentnb.cli._decisions import cmd_decide, cmd_respond
from agentnb.cli._definitions import cmd_draw, cmd_validate
from agentnb.cli._exits import REFUSED, USAGE, UsageError
from agentnb.cli._parser import check_text, command_line
from agentnb.cli._runs import cmd_prune, cmd_runs, cmd_show
from agentnb.cli._worker import cmd_worker
from agentnb.errors import AgentnbError, DecisionError, RunError, StoreError

__all__ = ["main"]


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "check": cmd_check,
    "demo": cmd_demo,
    "draw": cmd_draw,
    "validate": cmd_validate,
    "prune": cmd_prune,
    "runs": cmd_runs,
    "show": cmd_show,
    "worker": cmd_worker,
    "approve": cmd_decide,
    "reject": cmd_decide,
    "respond": cmd_respond,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    out = out or sys.stdout
    parser = command_line()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed the usage message
        return int(exc.code or 0)
    try:
        check_text(args)
        return COMMANDS[args.command](args, out)
    except UsageError as exc:
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
