"""Writes ``flat-machines-0012.db``: flat state-machine instances as agentnb stored them
before flat machines ran on the statechart interpreter — schema version 12, each row of
``machine_instances`` with ``chart`` NULL. Migration 0013 gives them the one format.

It was run with agentnb at 0e7b105 (the commit before the change) on the path::

    git archive 0e7b105 agentnb | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python tests/store/data/make_flat_machines_db.py

The test (tests/store/test_migration_flat_instances.py) imports :func:`light` from here,
so the definition that reads the file is the one that wrote it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentnb import SqliteCheckpointer
from agentnb.fsm import StateMachine

OUT = Path(__file__).with_name("flat-machines-0012.db")


def count(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"changes": context["changes"] + 1}


def light() -> StateMachine:
    """A traffic light that can be switched off for good (a final state)."""
    m = StateMachine(
        "traffic_light", ["RED", "GREEN", "YELLOW", "OFF"], initial="RED", final=["OFF"]
    )
    m.add_transition("RED", "timer", "GREEN", action=count)
    m.add_transition("GREEN", "timer", "YELLOW", action=count)
    m.add_transition("YELLOW", "timer", "RED", action=count)
    m.add_transition("RED", "off", "OFF")
    return m


def write(path: Path) -> None:
    path.unlink(missing_ok=True)
    with SqliteCheckpointer(path) as store:
        midway = light().start("midway", {"changes": 0}, store=store)
        midway.send("timer", event_id="t1")
        midway.send("timer", {"by": "ops"}, event_id="t2")
        ended = light().start("ended", {"changes": 0}, store=store, strict=False)
        ended.send("walk", event_id="w1")  # recorded as ignored
        ended.send("off", event_id="o1")
        light().start("fresh", {"changes": 0}, store=store)


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
