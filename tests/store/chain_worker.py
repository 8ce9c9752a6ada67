"""A long-run worker for test_chain_processes.py, run in its own process.

Usage: python chain_worker.py DB RUN STEPS START|CONTINUE
Steps the chat loop of run RUN (creating it with START) and prints ``step N`` after each
committed step, so the test can SIGKILL it between two steps or inside one.
"""

from __future__ import annotations

import sys

from agentnb import END, SqliteCheckpointer, StateGraph, Workflow


def workflow(store: SqliteCheckpointer, steps: int) -> Workflow:
    g = StateGraph("chat")
    g.add_node(
        "agent",
        lambda s: {"n": s["n"] + 1, "messages": [{"role": "ai", "text": f"m{s['n']}"}]},
    )
    g.set_entry_point("agent")
    g.add_conditional_edge("agent", lambda s: "agent" if s["n"] < steps else END, ["agent", END])
    return g.compile(store, max_steps=steps + 1)


def main() -> None:
    path, run_id, steps, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with SqliteCheckpointer(path) as store:
        wf = workflow(store, steps)
        run = (
            wf.start({"n": 0, "messages": []}, run_id=run_id)
            if mode == "START"
            else wf.attach(run_id)
        )
        while run.status == "running":
            run.step()
            print(f"step {run.steps}", flush=True)


if __name__ == "__main__":
    main()
