"""What agentnb does in the browser (Pyodide: ``sys.platform == "emscripten"``, no threads),
checked here on CPython by taking the threads away: ``has_threads()`` answers False and
``threading.Thread.start`` raises what Pyodide raises. The real Pyodide runs are in
tests/lite (Node) and tests/e2e/test_lite_browser.py (Chromium).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import types
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from agentnb import SyncUnavailable, _aio
from agentnb.examples import build_refund_workflow
from agentnb.fsm import MachineReloader
from agentnb.widgets import _relay


def no_thread(self: threading.Thread) -> None:
    raise RuntimeError("can't start new thread")


@pytest.fixture
def threadless(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "emscripten")
    monkeypatch.setattr(threading.Thread, "start", no_thread)


def page_that_cannot_suspend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pyodide's ``pyodide.ffi`` where JavaScript Promise Integration is missing."""

    def run_sync(coro: Coroutine[Any, Any, Any]) -> Any:
        raise AssertionError("run_sync called where can_run_sync() is False")

    ffi = types.ModuleType("pyodide.ffi")
    ffi.can_run_sync = lambda: False  # type: ignore[attr-defined]
    ffi.run_sync = run_sync  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyodide", types.ModuleType("pyodide"))
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)


def test_a_sync_call_where_the_page_cannot_suspend_names_the_twin_to_await(
    threadless: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    page_that_cannot_suspend(monkeypatch)
    run = build_refund_workflow().start({"requested": 10})
    with pytest.raises(SyncUnavailable) as raised:
        run.run()
    assert "await run.arun()" in str(raised.value)
    assert raised.value.call == "Run.arun"  # the coroutine alone() wrapped, closed too


def test_the_relay_in_the_browser_is_a_task_on_the_running_loop(threadless: None) -> None:
    refreshed: list[int] = []

    async def page() -> None:
        relay = _relay.Relay(lambda: refreshed.append(1), pytest.fail, min_interval=0.01)
        relay.start()
        assert relay.running
        relay.wake()
        deadline = asyncio.get_running_loop().time() + 30
        while not refreshed and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0)  # let the page's loop run the relay's task
        ran: list[str] = []
        relay.submit(lambda: ran.append("job"))
        while not ran and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0)
        relay.stop()
        while relay.running and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0)
        assert ran == ["job"]
        assert not relay.running

    asyncio.run(page())
    assert refreshed


def test_hot_reload_in_the_browser_reads_the_file_when_a_result_is_awaited(
    threadless: None, tmp_path: Path
) -> None:
    path = tmp_path / "light.json"
    states = ["red", "green"]
    transitions = [
        {"source": "red", "event": "timer", "target": "green"},
        {"source": "green", "event": "timer", "target": "red"},
    ]
    definition = {"name": "light", "states": states, "initial": "red"}
    path.write_text(json.dumps({**definition, "transitions": transitions}))
    reloader = MachineReloader(path).watch()  # no watcher thread, no watchfiles
    assert reloader.watching
    seen = len(reloader.results)
    more = [*transitions, {"source": "green", "event": "stop", "target": "red"}]
    path.write_text(json.dumps({**definition, "transitions": more}))
    result = reloader.wait_for_result(seen, timeout=0)
    assert result is not None
    assert result.applied
    assert "stop" in reloader.machine.allowed_events("green")
    reloader.close()
    assert not reloader.watching


def test_has_threads_is_false_only_in_the_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _aio.has_threads()
    monkeypatch.setattr(sys, "platform", "emscripten")
    assert not _aio.has_threads()
