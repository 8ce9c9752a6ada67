"""Exercise 06.4 is graded from Step clicks on the run's live panel, not only from code.

The panel's Step button sends ``{"kind": "step"}`` to the kernel; the run steps one
superstep and records it in the store like ``run.step()`` does, and the checker reads those
records. Before each click the panel lights the superstep that click runs — every task of
it: the nodes the student predicts.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentnb import SqliteCheckpointer
from agentnb.teach import grade
from agentnb.widgets import RunView
from tests.teach.parallel_scenarios import outline
from tests.waiting import until

SUPERSTEPS = [["plan"], ["papers", "web"], ["cite"], ["write"]]


def _lit(view: RunView) -> list[str]:
    """The nodes the panel lights as running next: a superstep's tasks, or its one node."""
    overlay = view.overlay
    return sorted(overlay["active"]) or [overlay["current"]]


def _click_step_until_done(view: RunView) -> list[list[str]]:
    """Click Step until the run completes; what the panel lit before each click."""
    lit: list[list[str]] = []

    async def main() -> None:
        while not view.run.status.finished:
            lit.append(_lit(view))
            before, drawn = view.step, len(view.overlay["traversed"])
            view._on_msg(view, {"kind": "step", "view": "v"}, [])
            await until(lambda b=before: view.step > b, what=f"the Step from step {before}")
            task = view._controls.task
            await until(lambda t=task: t is None or t.done(), what="the Step to finish")
            await until(
                lambda d=drawn: len(view.overlay["traversed"]) > d, what="the panel to redraw"
            )

    asyncio.run(main())
    return lit


def test_predicting_then_clicking_step_on_the_run_panel_passes_06_4(tmp_path: Path) -> None:
    with SqliteCheckpointer(tmp_path / "06.sqlite3") as store:
        run = outline(store, answer=SUPERSTEPS, steps=0)["run"]
        view = RunView(run)
        view.comm.send = lambda *args, **kwargs: None  # no browser: drop what it would draw
        try:
            assert _click_step_until_done(view) == SUPERSTEPS
            assert str(run.status) == "completed"
            assert grade("06.4", run=run, answer=SUPERSTEPS)
            assert not grade("06.4", run=run, answer=[["plan"], ["papers", "web"], ["write"]])
        finally:
            view.close()
