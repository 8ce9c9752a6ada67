"""Waiting on a live view from a test, without a wall-clock assertion."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

PATIENCE = 60.0
"""Seconds before a wait gives up. A wait ends as soon as its condition holds, so this only
bounds a failure: generous, because make test must pass with both cores kept busy."""


async def until(condition: Callable[[], Any], timeout: float = PATIENCE, what: str = "") -> None:
    """Wait for ``condition()`` to hold, letting the loop run; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or condition}")
        await asyncio.sleep(0.005)
