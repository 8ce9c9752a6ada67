"""Exercise 07.4 is graded from clicks on the live panel, not only from code that sends.

The panel's buttons send ``{"kind": "send", ...}`` messages to the kernel; the instance
records each event in the store like ``send`` does, and the checker reads those records.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentnb import ManualClock, SqliteCheckpointer
from agentnb.teach import grade
from agentnb.widgets import MachineView
from tests.teach.chart_scenarios import microwave
from tests.waiting import until

CLICKS = ["start", "defrost", "stop", "start"]


def _click_through(view: MachineView, count: Any, events: list[str]) -> None:
    async def main() -> None:
        for event in events:
            before = count()
            message = {"kind": "send", "event": event, "payload": "", "seq": view.seq}
            view._on_msg(view, message, [])
            await until(lambda b=before: count() > b, what=f"the click on {event!r}")
            # the panel shows the new state before the next click, as a person would see it
            await until(lambda: view.seq == count(), what=f"the panel after {event!r}")

    asyncio.run(main())


def test_predicting_then_clicking_the_panels_buttons_passes_07_4(tmp_path: Path) -> None:
    with SqliteCheckpointer(tmp_path / "07.sqlite3") as store:
        panel = microwave().start("panel", store=store, clock=ManualClock())
        view = MachineView(panel)
        view.comm.send = lambda *args, **kwargs: None  # no browser: drop what it would draw
        try:
            _click_through(view, lambda: len(panel.history), CLICKS)
            [step] = view.microsteps  # microstep mode: what the last click did
            assert sorted(step["entered"]) == ["cooking", "heating"]
            assert [r.event for r in panel.history] == CLICKS
            assert grade("07.4", instance=panel, answer={"oven": "heating", "timers": 1})
            assert not grade("07.4", instance=panel, answer={"oven": "defrosting", "timers": 1})
        finally:
            view.close()
