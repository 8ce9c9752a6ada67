"""``agentnb worker``: claim and drive runnable runs until stopped (or idle)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TextIO

from agentnb.cli._exits import OK, UsageError
from agentnb.cli._stores import open_store, shown

__all__ = ["WORKER_CONNECTIONS", "cmd_worker"]

WORKER_CONNECTIONS = 4
"""The most PostgreSQL connections one ``agentnb worker`` pools (fewer if --concurrency is)."""


def cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from agentnb.errors import DefinitionError
    from agentnb.graph.targets import bind_workflow
    from agentnb.graph.worker import Worker
    from agentnb.graph.workflow import Workflow

    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be 1 or more, not {args.concurrency}")
    # Its runs' commits overlap on a few pooled connections (PostgreSQL; docs/guides/postgres.md).
    with open_store(args.db, connections=min(args.concurrency, WORKER_CONNECTIONS)) as store:
        try:
            loaded = [bind_workflow(target, store) for target in args.workflow]
            workflows = [w for w in loaded if isinstance(w, Workflow)]
            charts = [c for c in loaded if not isinstance(c, Workflow)]
            worker = Worker(*workflows, machines=charts, store=store, concurrency=args.concurrency)
        except DefinitionError as exc:
            raise UsageError(str(exc)) from None
        names = ", ".join([*worker.workflows, *worker.machines])
        out.write(
            f"worker {worker.owner}: {names} on {shown(args.db)}, {args.concurrency} at once "
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
