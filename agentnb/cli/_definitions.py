"""``agentnb validate`` and ``draw``: check a definition file, draw a workflow or machine."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from agentnb.cli._exits import OK, REFUSED, existing_file

__all__ = ["cmd_draw", "cmd_validate"]


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.fsm.loader import validate_file
    from agentnb.graph.loader import definition_file_kind, validate_workflow_file

    existing_file("file", args.file, f"no file at {args.file!r}")
    path = Path(args.file)
    workflow = definition_file_kind(path) == "workflow"
    problems = validate_workflow_file(path) if workflow else validate_file(path)
    if not problems:
        out.write(f"{path}: valid\n")
        return OK
    out.write(f"{path}: {len(problems)} problem{'s' if len(problems) != 1 else ''}\n")
    for problem in problems:
        out.write(f"  {problem}\n")
    return REFUSED


def cmd_draw(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.render.export import cli_draw

    return cli_draw(args.target, args.output, direction=args.direction, stdout=out)
