"""The only module that touches event loops.

agentnb writes every operation once, as a coroutine, and offers a sync twin that calls
:func:`run_sync`. A sync call must return a value — never a coroutine — in three places:

* a script or pytest, where no loop runs in the main thread: the coroutine runs on a
  long-lived :class:`asyncio.Runner`, so async generators and other loop-bound objects
  survive between calls, and Ctrl-C cancels the running task (the run is recorded
  ``cancelled``) before ``KeyboardInterrupt`` propagates;
* a Jupyter kernel (or any code already inside a running loop), or any other thread: the
  coroutine is handed to one background thread with its own loop, and the caller waits. Blocking the
  kernel's loop for the duration is what a sync call means; an interrupt (the notebook's
  stop button) cancels the task there, waits for it to record the cancellation, then
  re-raises ``KeyboardInterrupt``.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import inspect
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")

_INTERRUPT_CHECK = 0.1
"""Seconds between a blocked sync call's checks for an interrupt (see ``_BackgroundLoop.run``)."""

_main_runner: asyncio.Runner | None = None
_background_lock = threading.Lock()
_background: _BackgroundLoop | None = None


class _BackgroundLoop:
    """One daemon thread running an event loop, for sync calls made inside a running loop."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="agentnb-loop", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import asyncio

        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        import concurrent.futures

        # Not run_coroutine_threadsafe: its future counts as done the moment it is
        # cancelled, while the task is still recording the cancellation. Here the caller
        # waits for the task itself; and an interrupt landing while the call is handed
        # over still cancels it (the hand-over is inside the try).
        result: concurrent.futures.Future[T] = concurrent.futures.Future()
        finished = threading.Event()
        tasks: list[asyncio.Task[T]] = []

        def start() -> None:  # on the loop
            task = self.loop.create_task(coro)
            tasks.append(task)
            task.add_done_callback(settle)

        def settle(task: asyncio.Task[T]) -> None:  # on the loop, once the task is over
            if task.cancelled():
                result.cancel()
            elif (error := task.exception()) is not None:
                result.set_exception(error)
            else:
                result.set_result(task.result())
            finished.set()

        def cancel() -> None:  # on the loop, after start() if start() was scheduled
            if tasks:
                tasks[0].cancel()
            else:  # interrupted before the hand-over: nothing ran
                coro.close()
                finished.set()

        try:
            self.loop.call_soon_threadsafe(start)
            # In slices: a SIGINT whose handler is due when this thread blocks (it landed
            # after the last check, before the lock wait began) does not break the wait —
            # CPython checks for signals only when a wait is interrupted — and would wait
            # for the call to end; at the slice's end the interrupt is raised here.
            while not finished.wait(_INTERRUPT_CHECK):
                pass
            return result.result()
        except KeyboardInterrupt:
            # Cancel the task in its own loop and let it finish recording the cancellation.
            self.loop.call_soon_threadsafe(cancel)
            finished.wait(timeout=30)
            raise

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


def _get_background() -> _BackgroundLoop:
    global _background
    with _background_lock:
        if _background is None:
            _background = _BackgroundLoop()
            atexit.register(_background.close)
        return _background


def _main_loop_runner() -> asyncio.Runner:
    global _main_runner
    if _main_runner is None:
        import asyncio

        _main_runner = asyncio.Runner()
        atexit.register(_main_runner.close)
    return _main_runner


def has_threads() -> bool:
    """False in the browser (Pyodide, ``sys.platform == "emscripten"``): Python has the
    page's one thread and cannot start another, so what would run in a thread runs inline
    or as a task on the page's loop."""
    return sys.platform != "emscripten"


def in_running_loop() -> bool:
    """True when this thread is inside a running event loop (e.g. a Jupyter kernel)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:  # nothing imported asyncio, so no loop can be running
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code and return its result.

    Works in scripts, in pytest and inside a running Jupyter kernel; in the browser
    (Pyodide) where the page can suspend, else it raises :class:`~agentnb.errors.SyncUnavailable`.
    """
    if sys.platform == "emscripten":
        return _suspend_in_browser(coro)
    if not in_running_loop() and threading.current_thread() is threading.main_thread():
        return _main_loop_runner().run(coro)
    if threading.current_thread() is getattr(_background, "thread", None):
        # A sync call from code already running on the background loop (a sync node calling
        # a sync API): that loop cannot wait on itself, so use a short-lived thread.
        return _run_in_new_thread(coro)
    return _get_background().run(coro)


def _suspend_in_browser(coro: Coroutine[Any, Any, T]) -> T:
    """Pyodide has no threads, so no loop of our own: the call suspends the WebAssembly
    stack until the coroutine is done on the page's loop (``pyodide.ffi.run_sync``: needs
    JavaScript Promise Integration, in Chromium 137+ and in Node 24 with
    ``--experimental-wasm-jspi``). Where the page cannot suspend, waiting would hang it:
    the call is refused, naming the coroutine whose async twin to ``await``."""
    from pyodide.ffi import can_run_sync, run_sync  # type: ignore[import-not-found]

    if can_run_sync():
        return run_sync(coro)  # type: ignore[no-any-return]
    from agentnb.errors import SyncUnavailable

    raise SyncUnavailable(_close_unstarted(coro))


def _close_unstarted(coro: Coroutine[Any, Any, Any]) -> str:
    """Close a coroutine that will never run, and the one it wraps (``alone(run.arun())``),
    so none warns "never awaited"; the innermost one's name says which twin to await."""
    while True:
        frame = getattr(coro, "cr_frame", None)
        inner = frame.f_locals.get("coro") if frame is not None else None
        name: str = getattr(coro, "__qualname__", type(coro).__name__)
        coro.close()
        if not isinstance(inner, Coroutine):
            return name
        coro = inner


def _run_in_new_thread(coro: Coroutine[Any, Any, T]) -> T:
    import asyncio
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="agentnb-nested") as pool:
        return pool.submit(asyncio.run, coro).result()


_alone: contextvars.ContextVar[bool] = contextvars.ContextVar("agentnb_alone", default=False)


async def alone(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` as a sync call's only work: its caller is blocked on it, so a store
    call inside may block the loop rather than hop to a thread and back
    (:meth:`~agentnb.store.base.Checkpointer.offload`). What ``run.run()`` and the other
    one-run sync twins wrap their coroutine in; tasks it starts inherit the mark."""
    token = _alone.set(True)
    try:
        return await coro
    finally:
        _alone.reset(token)


def driving_alone() -> bool:
    """True inside :func:`alone`: nothing else waits on this loop for the caller's sake."""
    return _alone.get()


def iterate_sync(agen: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator from synchronous code, one :func:`run_sync` per item.

    Closing the returned generator early closes ``agen`` too, so its cleanup runs. Each
    item is a sync call's only work (:func:`alone`): the caller waits for it.
    """

    async def next_item() -> tuple[bool, T | None]:
        try:
            return True, await agen.__anext__()
        except StopAsyncIteration:
            return False, None

    finished = False
    try:
        while True:
            more, item = run_sync(alone(next_item()))
            if not more:
                finished = True
                return
            yield item  # type: ignore[misc]
    finally:
        aclose = getattr(agen, "aclose", None)
        if not finished and aclose is not None:
            run_sync(aclose())


class Wakeup:
    """A signal any thread may raise and coroutines on any loop may wait for, with a timeout.

    Each :meth:`set` bumps :attr:`generation`; ``wait(after=g)`` returns at once if a set
    came after generation ``g`` was read, so a set that lands between a caller's look and
    its wait is never lost. What a store uses to tell idle workers that work was written.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._generation = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def set(self) -> None:
        with self._lock:
            self._generation += 1
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            # A closed loop raises RuntimeError: nobody waits there any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future)

    async def wait(self, timeout: float, *, after: int | None = None) -> bool:
        """Wait for a :meth:`set` later than generation ``after`` (default: now), at most
        ``timeout`` seconds; True if one came."""
        import asyncio

        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (loop, future)
        with self._lock:
            if after is not None and self._generation > after:
                return True
            self._waiters.append(entry)
        try:
            done, _ = await asyncio.wait({future}, timeout=max(timeout, 0.0))
        finally:
            with self._lock:
                if entry in self._waiters:
                    self._waiters.remove(entry)
        return bool(done)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


_awaiter: contextvars.ContextVar[Callable[[Coroutine[Any, Any, Any]], Any] | None] = (
    contextvars.ContextVar("agentnb_awaiter", default=None)
)


async def run_threaded(fn: Callable[..., T], *args: Any) -> T:
    """Run the sync ``fn(*args)`` in a worker thread, so that this loop stays free while it
    runs; an awaitable that ``fn`` meets and passes to :func:`settle` is awaited *on this
    loop* (the caller's), the thread waiting for it.

    This is how a state machine's interpreter, which is plain sync code, runs async guards,
    actions and hooks from :meth:`~agentnb.MachineInstance.asend`: they see the loop the
    caller awaits on, and concurrent sends on it interleave as coroutines do.
    """
    import asyncio

    loop = asyncio.get_running_loop()

    def wait(coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    context = contextvars.copy_context()
    context.run(_awaiter.set, wait)
    return await loop.run_in_executor(None, context.run, fn, *args)


def settle(value: Any) -> Any:
    """``value``, or what it gives when it is awaitable: awaited on the loop of the
    :func:`run_threaded` call running this code, or — outside one — as a sync call does
    (:func:`run_sync`)."""
    if not inspect.isawaitable(value):
        return value
    coro = value if inspect.iscoroutine(value) else _awaited(value)
    wait = _awaiter.get()
    return run_sync(coro) if wait is None else wait(coro)


async def _awaited(value: Awaitable[T]) -> T:
    return await value
