"""Another process on the panel's PostgreSQL database, for tests/widgets/test_widget_notify.py.

Usage: python pg_stepper.py DSN RUN_ID    then one command a line on stdin:
       ``step``  one step of RUN_ID (a chain of nodes, see :func:`chain`), then ``stepped N``
       ``send EVENT``  the event to the traffic-light instance RUN_ID, then ``sent STATE``
It answers on stdout once the step or transition is committed, so a test knows what the
database holds when it starts waiting for the panel.
"""

from __future__ import annotations

import itertools
import sys

from agentnb import END, PostgresCheckpointer, StateGraph, Workflow
from agentnb.fsm import StateMachine


def chain(store: PostgresCheckpointer) -> Workflow:
    """Four nodes in a row, each appending its name to ``done``."""
    g = StateGraph("notify-chain")
    names = [f"n{i}" for i in range(4)]
    for name in names:
        g.add_node(name, lambda s, name=name: {"done": [*s.get("done", []), name]})
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(store)


def lights() -> StateMachine:
    """red -> green -> red on ``go`` and ``stop``."""
    light = StateMachine("notify-lights", ["red", "green"], "red")
    light.add_transition("red", "go", "green")
    light.add_transition("green", "stop", "red")
    return light


def main(dsn: str, key: str) -> None:
    with PostgresCheckpointer(dsn) as store:
        workflow = chain(store)
        print("ready", flush=True)
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            if command == "step":
                run = workflow.attach(key)
                run.step()
                print(f"stepped {run.steps}", flush=True)
            elif command == "send":
                light = lights().resume(key, store=store)
                light.send(arg)
                print(f"sent {light.state}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
