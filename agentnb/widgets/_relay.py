"""``Relay``: one thread per view that carries run updates to the browser at a bounded rate.

Why a thread and not a task on the kernel's event loop: a run driven from a cell with the
sync API (``run.run()``) blocks the kernel's loop for the whole run, and a decision made
by another process must show up even while a cell is busy. The thread wakes when this
process commits an event (a workflow listener calls :meth:`Relay.wake`), when the store
announces another process's commit (PostgreSQL's ``LISTEN``/``NOTIFY``, through
:mod:`agentnb.store.watch`), and otherwise polls the store every ``poll_interval``
seconds while a browser view is open — unless the store's announcements are
:attr:`Relay.announced` (then it polls only while the listening connection is down).

Coalescing: after each refresh the relay waits out ``min_interval`` before the next one,
so a workflow committing thousands of events per second costs the browser at most
``1 / min_interval`` updates per second, each carrying every event since the last one.

Every message to the browser is sent from this thread (jobs submitted by the kernel's
thread run here too), so widget traits have one writer and batches keep their order.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["Relay"]


class Relay:
    """Runs ``refresh()`` on its own thread when woken, when polled, or when given a job.

    Args:
        refresh: reads what changed and sends it; called on the relay thread only.
        on_error: told about an exception raised by ``refresh`` or a job (the relay goes on).
        min_interval: seconds between two refreshes (the coalescing window).
        poll_interval: seconds between refreshes while :attr:`polling` and nothing woke it.
        name: the thread's name.
    """

    def __init__(
        self,
        refresh: Callable[[], None],
        on_error: Callable[[BaseException], None],
        *,
        min_interval: float = 0.1,
        poll_interval: float = 0.5,
        name: str = "agentnb-relay",
    ) -> None:
        self._refresh = refresh
        self._on_error = on_error
        self.min_interval = min_interval
        self.poll_interval = poll_interval
        self.polling = False
        """Poll the store on a timer; on while a browser view is open."""
        self.announced: Callable[[], bool] = lambda: False
        """True while the store announces every commit (no need to poll); whoever changes
        what it answers calls :meth:`wake`, so the next wait is chosen by the new answer."""
        self.refreshes = 0
        """How many refreshes ran (the update rate actually used, for benchmarks)."""
        self._jobs: deque[Callable[[], None]] = deque()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread (once)."""
        self._thread.start()

    def wake(self) -> None:
        """Ask for a refresh soon; cheap enough to call for every event of a burst."""
        # Reading the flag is far cheaper than setting it (a lock). Safe: the relay clears
        # the flag before it reads, so an event committed before this call is read anyway.
        if not self._wake.is_set():
            self._wake.set()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job()`` on the relay thread soon, without waiting out the update window."""
        self._jobs.append(job)
        self._wake.set()

    @property
    def running(self) -> bool:
        """True until :meth:`stop` has taken effect."""
        return self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; waits up to ``timeout`` seconds for a refresh in progress."""
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run_jobs(self) -> None:
        while self._jobs:
            try:
                self._jobs.popleft()()
            except Exception as exc:  # a bad job: say so, run the next
                self._on_error(exc)

    def _loop(self) -> None:
        last = float("-inf")
        while not self._stopped.is_set():
            polls = self.polling and not self.announced()
            self._wake.wait(self.poll_interval if polls else None)
            if self._stopped.is_set():
                return
            # A view's request (rows it scrolled to, a step of the history) is answered at
            # once: only refreshes are held to the window.
            self._run_jobs()
            # Wait out the rest of the window: events arriving meanwhile join this refresh.
            gap = self.min_interval - (time.monotonic() - last)
            if gap > 0 and self._stopped.wait(gap):
                return
            # Cleared before reading, so an event committed during the refresh wakes us again.
            self._wake.clear()
            try:
                self._refresh()
                self.refreshes += 1
            except Exception as exc:  # a closed store: say so and keep relaying
                self._on_error(exc)
            self._run_jobs()
            # The window starts when the sends are done, so sends are min_interval apart
            # however long a big refresh took.
            last = time.monotonic()
