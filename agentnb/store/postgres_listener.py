"""One listening connection per PostgreSQL store, shared by its Worker and its live panels.

Two channels, both heard on the one connection a :class:`Listener` keeps:

* ``agentnb_work`` (:data:`~agentnb.store.postgres_claims.CHANNEL`): a write made work
  claimable (a run submitted, a decision, an answer, a run put back). An idle
  :class:`~agentnb.Worker`'s ``await_work`` returns at once instead of polling.
* ``agentnb_changes`` (:data:`CHANGES`): a commit changed a run tree or a machine
  instance someone watches; the payload is its topic (:func:`run_topic`,
  :func:`machine_topic`). The panels watching it are woken (:mod:`agentnb.store.watch`).

**Only watched things are announced.** A ``NOTIFY`` makes its transaction's commit take a
database-wide lock until the commit is flushed, so every step announcing itself would
make parallel workers commit one at a time. Instead a watch holds a session-level shared
advisory lock on its topic's key (lock space ``WATCHED``) on this connection, and a
writer's ``BEGIN`` tries that key exclusively (:func:`~agentnb.store.postgres_locks.begin`):
failing means somebody watches, and only then does the writer ``NOTIFY`` with its commit.
Unwatched steps — the workers' bulk — pay one lock-table probe in a round trip they make
anyway. Nothing slips between: a watch taken while a writer's transaction holds the key
is live only once that transaction has committed (its lock waits for it, in slices of
:data:`LOCK_WAIT`, between which the thread serves everyone else), and the panel reads
once its watch is live.

**Losing the connection** (a restarted server, ``pg_terminate_backend``): the watches stop
being live — the panels poll — and the listener's thread reconnects with backoff, listens
again, takes the watches' locks again, then wakes every panel (a change may have been
committed while nobody listened) and every waiting worker (claim again).

The connection belongs to the listener's thread, which sleeps in a selector on its socket
and on a socket pair other threads poke when they add or drop a watch.
"""

from __future__ import annotations

import contextlib
import functools
import selectors
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agentnb._aio import Wakeup
from agentnb._listeners import Listeners
from agentnb.store.postgres_claims import CHANNEL
from agentnb.store.postgres_locks import SHARED, WATCHED, run_lock

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CHANGES",
    "Listener",
    "announcement",
    "machine_topic",
    "run_topic",
    "topic_of",
    "unannounced",
]

CHANGES = "agentnb_changes"
RETRY_FIRST = 0.05
RETRY_MAX = 2.0
"""Seconds between reconnection attempts: doubling from the first to the most."""
LOCK_WAIT = 0.1
"""Seconds a watch's lock waits for a writer holding its key (then the listener hears and
tries again): a writer stuck mid-transaction must not stop every other watch and wait."""


def run_topic(run_id: str) -> str:
    """The topic of ``run_id``'s tree: a subgraph's run (``parent/task@step``) moves its
    root's panel, so a run and all its subgraphs' runs share the root's topic."""
    return "run:" + run_id.split("/", 1)[0]


def machine_topic(instance_id: str) -> str:
    """The topic of a state-machine instance."""
    return "machine:" + instance_id


def announcement(conn: psycopg.Connection[Any], topic: str) -> str:
    """``NOTIFY agentnb_changes, 'topic'``, the topic quoted as a literal for ``conn`` (it
    is sent with the ``COMMIT``, in one round trip: no parameters there)."""
    from psycopg import sql

    return sql.SQL("NOTIFY {}, {}").format(sql.Identifier(CHANGES), topic).as_string(conn)


def topic_of(key: str | None) -> str | None:
    """The topic a write transaction locking ``key`` announces (None: it moves no run)."""
    if key is None or key is SHARED:
        return None
    return run_topic(key)


_F = TypeVar("_F", bound=Callable[..., Any])


def unannounced(method: _F) -> _F:
    """Announce none of ``method``'s writes: taking a lease changes nothing a panel shows,
    and a panel woken for it would refresh for nothing, then hold the step's own commit
    back by its coalescing window."""

    @functools.wraps(method)
    def quiet(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._local.quiet = True
        try:
            return method(self, *args, **kwargs)
        finally:
            self._local.quiet = False

    return cast(_F, quiet)


class _Watch:
    """One panel's watch of one topic (:class:`~agentnb.store.watch.Watch`)."""

    def __init__(self, listener: Listener, topic: str, remove: Callable[[], None]) -> None:
        self._listener = listener
        self.topic = topic
        self._remove = remove
        self._closed = False

    @property
    def live(self) -> bool:
        return not self._closed and self._listener.holds(self.topic)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._remove()
            self._listener.forget(self.topic)


class Listener:
    """``LISTEN`` on one connection of its own, on a thread of its own (started on first use).

    Args:
        connect: opens a new autocommit connection (raises when the server is away).
    """

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self._connect = connect
        self._lock = threading.Lock()
        self._topics: dict[str, Listeners[[]]] = {}  # watched topic -> its panels' wakes
        self._held: set[str] = set()  # topics whose lock this connection holds (thread)
        self._up = False
        self._work = Wakeup()
        self._taken: dict[str, int] = {}  # worker -> the work generation it last woke for
        self._stopped = threading.Event()
        self._poke_in, self._poke_out = socket.socketpair()
        self._poke_in.setblocking(False)
        self._poke_out.setblocking(False)
        self._thread: threading.Thread | None = None
        self.connects = 0
        """Connections opened so far (the first, then one per reconnection)."""
        self.backend_pid: int | None = None
        """The server process of the current connection (``pg_terminate_backend`` it)."""

    # -- the Worker's side -----------------------------------------------------------------

    async def await_work(self, owner: str, timeout: float) -> bool:
        """Wait for a sign of work since ``owner``'s last wait returned, at most ``timeout``
        seconds; True if one came.

        The first wait returns once listening has started: work announced before that was
        heard by nobody, so the caller claims again. A wait cancelled before it returned
        leaves its sign for the next.
        """
        self.start()
        after = self._taken.get(owner, 0)
        came = await self._work.wait(timeout, after=after)
        self._taken[owner] = self._work.generation
        return came

    # -- the panels' side ------------------------------------------------------------------

    def watch(self, topic: str, wake: Callable[[], None]) -> _Watch:
        """Call ``wake()`` after each announced commit of ``topic`` and whenever the watch
        becomes live or stops being live."""
        self.start()
        with self._lock:
            wakes = self._topics.get(topic)
            if wakes is None:
                wakes = self._topics[topic] = Listeners(f"change of {topic}")
            remove = wakes.add(wake)
        self._poke()
        return _Watch(self, topic, remove)

    def holds(self, topic: str) -> bool:
        """Whether commits of ``topic`` are announced to this process right now."""
        with self._lock:
            return self._up and topic in self._held

    def forget(self, topic: str) -> None:
        """Drop ``topic`` if no watch of it is left (its lock is let go on the thread)."""
        with self._lock:
            wakes = self._topics.get(topic)
            if wakes is not None and not wakes:
                del self._topics[topic]
        self._poke()

    # -- lifetime --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the listening thread (once; not after :meth:`close`)."""
        with self._lock:
            if self._thread is not None or self._stopped.is_set():
                return
            self._thread = threading.Thread(
                target=self._loop, name="agentnb-pg-listener", daemon=True
            )
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def close(self, timeout: float = 5.0) -> None:
        """Stop listening for good: waits go on to their timeouts, watches stop being live."""
        self._stopped.set()
        self._poke()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._work.set()  # a waiting worker claims (and finds the store closed)

    # -- the thread ------------------------------------------------------------------------

    def _poke(self) -> None:
        with contextlib.suppress(OSError):  # full: the thread has a poke to read already
            self._poke_out.send(b"\0")

    def _loop(self) -> None:
        pause = RETRY_FIRST
        try:
            while not self._stopped.is_set():
                try:
                    conn = self._connect()
                except Exception:  # away, refused: the panels poll meanwhile, try again
                    if self._stopped.wait(pause):  # a backoff, not a wait for a condition
                        return
                    pause = min(pause * 2, RETRY_MAX)
                    continue
                pause = RETRY_FIRST
                self.connects += 1
                try:
                    self._serve(conn)
                except Exception:  # the connection was lost (restarted, terminated)
                    pass
                finally:
                    self._down(conn)
        finally:
            self._poke_in.close()
            self._poke_out.close()

    def _serve(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(f"SET lock_timeout = {round(LOCK_WAIT * 1000)}")
        conn.execute(f"LISTEN {CHANGES}")
        conn.execute(f"LISTEN {CHANNEL}")
        self.backend_pid = conn.info.backend_pid
        with self._lock:
            self._up = True
        self._work.set()  # work may have been announced while nobody listened
        with selectors.DefaultSelector() as ready:  # epoll: any descriptor number
            ready.register(conn.fileno(), selectors.EVENT_READ)
            ready.register(self._poke_in, selectors.EVENT_READ)
            while not self._stopped.is_set():
                behind = self._sync(conn)
                # What arrived meanwhile (also during the statements above: psycopg
                # keeps it), then sleep until the server or another thread speaks (or,
                # with a watch's lock still to take, until it is tried again).
                for note in conn.notifies(timeout=0):
                    self._heard(note.channel, note.payload)
                for key, _ in ready.select(0 if behind else None):
                    if key.fileobj is self._poke_in:
                        with contextlib.suppress(BlockingIOError):
                            while self._poke_in.recv(4096):
                                pass

    def _sync(self, conn: psycopg.Connection[Any]) -> bool:
        """Hold the lock of every watched topic and of no other; wake the newly live.
        True if a lock is still to be taken (a writer held its key past :data:`LOCK_WAIT`)."""
        with self._lock:
            wanted = set(self._topics)
            drop, take = self._held - wanted, wanted - self._held
        for topic in drop:
            conn.execute("SELECT pg_advisory_unlock_shared(%s, %s)", (WATCHED, run_lock(topic)))
            with self._lock:
                self._held.discard(topic)
        behind = False
        for topic in sorted(take):
            # Waits for a writer's transaction holding the key: it commits unannounced,
            # and the panel, woken below, reads after that commit.
            try:
                conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", (WATCHED, run_lock(topic)))
            except self._lock_not_available:  # not live yet: its panel polls meanwhile
                behind = True
                continue
            with self._lock:
                self._held.add(topic)
                wakes = self._topics.get(topic)
            if wakes is not None:
                wakes.notify()
        return behind

    @property
    def _lock_not_available(self) -> type[Exception]:
        import psycopg

        return psycopg.errors.LockNotAvailable

    def _heard(self, channel: str, payload: str) -> None:
        if channel == CHANNEL:
            self._work.set()
            return
        with self._lock:
            wakes = self._topics.get(payload)
        if wakes is not None:
            wakes.notify()

    def _down(self, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            self._up = False
            self._held.clear()  # the server let go of the session's locks with it
            everyone = list(self._topics.values())
        with contextlib.suppress(Exception):  # already broken
            conn.close()
        for wakes in everyone:  # not live any more: they poll until the next connection
            wakes.notify()
        self._work.set()
