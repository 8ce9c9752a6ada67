"""A process whose clock is wrong, for tests/store/test_lease_clocks.py.

Usage: python clock_worker.py work DB     drive the ``slow`` runs of DB with a Worker until idle
       python clock_worker.py lease DB    lease the due timers of ``lamp`` machines, hold them
       python clock_worker.py fire DB     fire the due timers of ``lamp`` machines until idle

``DB`` is a SQLite file or a ``postgresql://`` URL. ``AGENTNB_SKEW`` (seconds, may be
negative) moves this process's ``time.time()`` — and ``time.time_ns()`` — by that much
before agentnb is imported: the clock of a machine that drifted, or was set an hour wrong.

``work``: the ``slow`` workflow (:func:`slow`) with a lease of ``AGENTNB_LEASE`` seconds.
Its first node appends ``RUN_ID PID`` to ``AGENTNB_EXEC_LOG`` each time it executes; when
``AGENTNB_HOLD`` names a file, it prints ``held`` and waits (on the event loop, so the
worker's heartbeat renews the lease meanwhile) until that file exists. ``lease``: claims
the due timers once, prints ``held`` and the claims as JSON, then holds until
``AGENTNB_HOLD`` exists, without releasing. Each command ends by printing its result as
JSON on the last line.
"""

from __future__ import annotations

import os
import time

_SKEW = float(os.environ.get("AGENTNB_SKEW", "0"))
if _SKEW:
    _real, _real_ns = time.time, time.time_ns
    time.time = lambda: _real() + _SKEW  # every later time.time() reads the skewed clock
    time.time_ns = lambda: _real_ns() + int(_SKEW * 1e9)

import asyncio  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from agentnb import Checkpointer, NodeContext, State, Statechart, StateGraph, Worker  # noqa: E402
from agentnb.cli._stores import open_store  # noqa: E402
from agentnb.store.leases import new_owner  # noqa: E402

DEADLINE = 60.0


async def _hold() -> None:
    hold = os.environ.get("AGENTNB_HOLD")
    if not hold:
        return
    print("held", flush=True)
    deadline = time.monotonic() + DEADLINE
    while not Path(hold).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{hold} never appeared")
        await asyncio.sleep(0.01)


async def _work(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
    with open(os.environ["AGENTNB_EXEC_LOG"], "a") as f:
        f.write(f"{ctx.run_id} {os.getpid()}\n")
    await _hold()
    return {"worked": os.getpid()}


def slow(store: Checkpointer, lease_seconds: float) -> Any:
    """work -> done, ``work`` counted and held (see the module's docstring)."""
    g = StateGraph("slow").add_node("work", _work).add_node("done", lambda s: {"done": True})
    g.set_entry_point("work").add_edge("work", "done")
    return g.compile(store, lease_seconds=lease_seconds)


def lamp() -> Statechart:
    """A lamp that turns itself off 60 seconds after it was turned on."""
    return Statechart("lamp", [State("on", after={60: "off"}), State("off")])


def main(argv: list[str]) -> int:
    command, db = argv
    with open_store(db) as store:
        if command == "work":
            wf = slow(store, float(os.environ.get("AGENTNB_LEASE", "30")))
            stats = Worker(wf).run(until_idle=True)
            result: Any = {"claimed": stats.claimed, "completed": stats.completed}
            result["lost"] = stats.lost
        elif command == "lease":
            claims = store.claim_timers(new_owner(), ["lamp"], limit=10, lease_seconds=30)
            result = [c.instance_id for c in claims]
            if claims:
                asyncio.run(_hold())
        elif command == "fire":
            stats = Worker(machines=[lamp()], store=store).run(until_idle=True)
            result = {"timers": stats.timers}
        else:
            raise SystemExit(f"unknown command {command!r}")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
