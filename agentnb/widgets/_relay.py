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

In the browser (Pyodide) Python cannot start a thread: the relay is a task on the page's
running loop instead (:meth:`Relay._follow_on_loop`), following the same rule
(:meth:`Relay._cycle`); a sync run there suspends the page, so the view catches up when
the call returns.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator

from agentnb._aio import has_threads

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
        self._task: asyncio.Task[None] | None = None  # the relay in the browser
        self._nudged: asyncio.Event | None = None  # set with _wake or _stopped there

    def start(self) -> None:
        """Start the thread (once); in the browser, the task on the running loop."""
        if has_threads():
            self._thread.start()
        else:
            self._nudged = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._follow_on_loop())

    def wake(self) -> None:
        """Ask for a refresh soon; cheap enough to call for every event of a burst."""
        # Reading the flag is far cheaper than setting it (a lock). Safe: the relay clears
        # the flag before it reads, so an event committed before this call is read anyway.
        if not self._wake.is_set():
            self._wake.set()
            self._nudge()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job()`` on the relay thread soon, without waiting out the update window."""
        self._jobs.append(job)
        self._wake.set()
        self._nudge()

    @property
    def running(self) -> bool:
        """True until :meth:`stop` has taken effect."""
        if self._task is not None:
            return not self._task.done()
        return self._thread.is_alive()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread; waits up to ``timeout`` seconds for a refresh in progress."""
        self._stopped.set()
        self._wake.set()
        self._nudge()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _nudge(self) -> None:
        # In the browser everything runs on the page's one thread: the task's event can be
        # set directly.
        if self._nudged is not None:
            self._nudged.set()

    def _run_jobs(self) -> None:
        while self._jobs:
            try:
                self._jobs.popleft()()
            except Exception as exc:  # a bad job: say so, run the next
                self._on_error(exc)

    def _loop(self) -> None:
        for flag, timeout in self._cycle():
            flag.wait(timeout)

    async def _follow_on_loop(self) -> None:
        """The relay in the browser: the same cycle, its waits awaited on the page's loop."""
        nudged = self._nudged
        assert nudged is not None
        for flag, timeout in self._cycle():
            deadline = None if timeout is None else time.monotonic() + timeout
            while not flag.is_set():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                nudged.clear()
                try:
                    await asyncio.wait_for(nudged.wait(), left)
                except TimeoutError:
                    break

    def _cycle(self) -> Iterator[tuple[threading.Event, float | None]]:
        """The relay's rule, written once: it yields what to wait for (a flag, at most how
        many seconds) and the thread or the task does the waiting."""
        last = float("-inf")
        while not self._stopped.is_set():
            polls = self.polling and not self.announced()
            yield self._wake, (self.poll_interval if polls else None)
            if self._stopped.is_set():
                return
            # A view's request (rows it scrolled to, a step of the history) is answered at
            # once: only refreshes are held to the window.
            self._run_jobs()
            # Wait out the rest of the window: events arriving meanwhile join this refresh.
            gap = self.min_interval - (time.monotonic() - last)
            if gap > 0:
                yield self._stopped, gap
                if self._stopped.is_set():
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
