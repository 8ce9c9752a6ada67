"""How the PostgreSQL checkpointer's transactions lock, reconnect and wake workers.

Every write transaction takes transaction-scoped advisory locks in its first round trip
(:func:`begin`): the database-wide key (space 0) shared, and its run's key (space 1)
exclusive — so different runs commit in parallel while one run's transactions queue.
Retention and machine writes take the database-wide key exclusively; claims and heartbeats
only share it (their rows are locked by the ``UPDATE`` itself). Which key a call locks is
set by the decorators below, on a thread-local of the store, around the shared code.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Callable
from typing import Any, TypeVar, cast

from agentnb.store.postgres_session import Disconnected

__all__ = [
    "SHARED",
    "WATCHED",
    "begin",
    "for_new_run",
    "for_run",
    "keyed",
    "reconnecting",
    "run_lock",
    "waking",
]

_DATABASE = 0
"""Advisory lock space 0, key 0: the database-wide key (exclusive: retention, machines)."""
_RUNS = 1
"""Advisory lock space 1: one key per run id (:func:`run_lock`)."""
WATCHED = 2
"""Advisory lock space 2: a topic some process watches (its listener holds the key shared)."""
SHARED = "\x00any run"
"""The lock key of a write that takes no run's lock, only the shared database key: a
claim (its rows are locked by ``FOR UPDATE SKIP LOCKED``) and a heartbeat."""
_F = TypeVar("_F", bound=Callable[..., Any])


def run_lock(run_id: str) -> int:
    """The advisory lock key of ``run_id`` (a signed 32-bit CRC: a collision only
    serialises two runs' writes, it never mixes them)."""
    h = zlib.crc32(run_id.encode())
    return h - 2**32 if h >= 2**31 else h


def reconnecting(method: _F) -> _F:
    """Run ``method`` again on a new connection when the old one was lost before commit."""

    @functools.wraps(method)
    def again(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._using():  # pooled: the connection this call holds, again included
            while True:
                try:
                    return method(self, *args, **kwargs)
                except Disconnected:
                    self._reconnect()

    return cast(_F, again)


def keyed(key: str | None, method: _F) -> _F:
    """Lock ``key`` (:data:`SHARED`, or ``None`` for the database-wide key) in every write
    transaction of ``method``."""

    @functools.wraps(method)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        previous = getattr(self._local, "key", None)
        self._local.key = key
        try:
            return method(self, *args, **kwargs)
        finally:
            self._local.key = previous

    return cast(_F, reconnecting(locked))


def waking(method: _F) -> _F:
    """Send ``NOTIFY`` with the writes of ``method``: they may make work claimable."""

    @functools.wraps(method)
    def waking(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._local.wakes = True
        try:
            return method(self, *args, **kwargs)
        finally:
            self._local.wakes = False

    return cast(_F, waking)


def for_run(method: _F) -> _F:
    """Lock the run named by the first argument in every write transaction of ``method``."""

    @functools.wraps(method)
    def locked(self: Any, run_id: str, *args: Any, **kwargs: Any) -> Any:
        previous = getattr(self._local, "key", None)
        self._local.key = run_id
        try:
            return method(self, run_id, *args, **kwargs)
        finally:
            self._local.key = previous

    return cast(_F, reconnecting(locked))


def for_new_run(method: _F) -> _F:
    """Lock the key of the run ``method`` creates (its record the first argument), and send
    ``NOTIFY`` when the run is created queued (``workflow.submit``: wake a worker)."""

    @functools.wraps(method)
    def locked(self: Any, run: Any, *args: Any, **kwargs: Any) -> Any:
        previous = getattr(self._local, "key", None)
        self._local.key = run.run_id
        self._local.wakes = run.status == "queued"
        try:
            return method(self, run, *args, **kwargs)
        finally:
            self._local.key = previous
            self._local.wakes = False

    return cast(_F, reconnecting(locked))


def begin(key: str | None, *, durable: bool, topic: str | None = None) -> str:
    """``BEGIN`` and the locks of ``key`` in one round trip, with the commit level
    (integers only, no parameters).

    With a ``topic`` (:mod:`agentnb.store.postgres_listener`), the last column says
    whether nobody watches it (False: a panel does; announce the commit)."""
    extra = ", set_config('synchronous_commit', 'on', true)" if durable else ""
    if topic is not None:
        extra += f", pg_try_advisory_xact_lock({WATCHED}, {run_lock(topic)})"
    if key is None:
        locks = f"pg_advisory_xact_lock({_DATABASE}, 0)"
    elif key is SHARED:
        locks = f"pg_advisory_xact_lock_shared({_DATABASE}, 0)"
    else:
        locks = (
            f"pg_advisory_xact_lock_shared({_DATABASE}, 0), "
            f"pg_advisory_xact_lock({_RUNS}, {run_lock(key)})"
        )
    return f"BEGIN; SELECT {locks}{extra}"
