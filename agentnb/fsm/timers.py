"""Clocks for delayed events: the wall clock, and a :class:`ManualClock` for tests and lessons.

A statechart instance asks its clock for "now" when it schedules a delayed event and when
it looks for due timers (:meth:`~agentnb.fsm.chart_instance.ChartInstance.run_due`); nothing
sleeps. With a manual clock, time moves only when you say so.

Example:
    >>> clock = ManualClock(100.0)
    >>> clock.advance(2.5)
    102.5
    >>> clock()
    102.5
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["Clock", "ManualClock", "wall_clock"]

Clock: TypeAlias = Callable[[], float]
"""``clock() -> seconds since the epoch``."""


def wall_clock() -> float:
    """The system's time (``time.time()``)."""
    return time.time()


class ManualClock:
    """A clock that moves only when told to (``advance``/``set``).

    Example:
        A delayed event fires when the clock reaches it, and only then:

        >>> from agentnb import ManualClock, State, Statechart
        >>> clock = ManualClock()
        >>> kettle = Statechart("kettle", [State("heating", after={5: "boiled"}), State("boiled")])
        >>> instance = kettle.start(clock=clock)
        >>> clock.advance(4)
        4.0
        >>> instance.run_due()
        []
        >>> clock.advance(1)
        5.0
        >>> [record.target for record in instance.run_due()]
        ['boiled']
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<ManualClock at {self._now:g}>"

    def __call__(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        """Move by ``seconds`` and return the new time."""
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, now: float) -> float:
        """Jump to ``now`` (seconds) and return it."""
        with self._lock:
            self._now = float(now)
            return self._now
