"""A workflow with approver policies, driven from separate processes by the CLI tests.

Usage: python approver_worker.py DB start KIND          start a run, print its id
       python approver_worker.py DB approve KIND RUN BY  attach to RUN, approve it, print
                                                        the outcome (exit 1 if refused)
KIND is ``members`` (approvers ada and bob, separate duties) or ``callable`` (a function
that only lets the ``finance`` group approve amounts over 500). Who this process is comes
from JUPYTERHUB_USER, as in a JupyterHub server.
"""

from __future__ import annotations

import sys
from typing import Any

from agentnb import Checkpointer, Identity, SqliteCheckpointer, StateGraph, Workflow
from agentnb.errors import DecisionError
from agentnb.store import PendingRun


def finance_over_500(identity: Identity, run: PendingRun) -> bool:
    return run.state["amount"] <= 500 or identity.name in {"bob"}


def workflow(db: str, kind: str) -> Workflow:
    return graph(kind).compile(SqliteCheckpointer(db))


def callable_graph(store: Checkpointer) -> Workflow:
    """The ``callable`` kind's workflow, for ``agentnb approve --workflow MODULE:ATTR``
    (a ``build(store)`` function, as ``agentnb worker --workflow`` takes)."""
    return graph("callable").compile(store)


def graph(kind: str) -> StateGraph:
    graph = StateGraph(f"refund-{kind}")
    graph.add_node("plan", lambda s: {"amount": s["requested"]})
    graph.add_node("refund", lambda s: {"paid": s["amount"]})
    graph.set_entry_point("plan").add_edge("plan", "refund")
    approvers: Any = {"ada", "bob"} if kind == "members" else finance_over_500
    graph.add_interrupt_before("refund", approvers=approvers, separate_duties=kind == "members")
    return graph


def main(db: str, command: str, kind: str, *rest: str) -> int:
    wf = workflow(db, kind)
    if command == "start":
        run = wf.start({"requested": 900})
        run.run()
        print(run.run_id)
        return 0
    run_id, by = rest
    try:
        decision = wf.attach(run_id).approve(by=by)
    except DecisionError as exc:
        print(f"{type(exc).__name__}: {exc}")
        return 1
    print(f"approved as {decision.approver} (identity {decision.identity})")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
