"""Being told that what a live panel shows has changed, by a store that can tell.

A live panel (:class:`~agentnb.widgets.RunView`, :class:`~agentnb.widgets.MachineView`)
reads the truth from its store. Writes made in its own process wake it through the
workflow's or machine's listeners; a write by another process is found by polling the
store — unless the store announces its commits. PostgreSQL does
(:mod:`agentnb.store.postgres_listener`: ``LISTEN``/``NOTIFY``): such a store is
:class:`Watchable`, and ``store.watch(id, wake)`` calls ``wake()`` after every commit, in
any process, that changed the run (or a run of its tree) or the machine instance ``id``.

``wake`` is also called whenever :attr:`Watch.live` changes: when the announcements stop
(the listening connection was lost) the panel polls again, and when they come back it
reads once more, since a change may have been committed while nobody listened.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["UNWATCHED", "Watch", "Watchable", "watch"]


class Watch(Protocol):
    """One panel's subscription to announcements of one run or instance."""

    @property
    def live(self) -> bool:
        """True while every commit is announced: the panel need not poll."""
        ...

    def close(self) -> None:
        """Stop announcing to this watch (twice is harmless)."""
        ...


@runtime_checkable
class Watchable(Protocol):
    """A store that announces commits: ``watch(id, wake) -> Watch``."""

    def watch(self, key: str, wake: Callable[[], None]) -> Watch:
        """Call ``wake()`` after each commit that changed ``key`` (a run or instance id)."""
        ...


class _Unwatched:
    """What a store that announces nothing gives: never live, so the panel polls."""

    live = False

    def close(self) -> None:
        pass


UNWATCHED: Watch = _Unwatched()


def watch(store: object, key: str, wake: Callable[[], None]) -> Watch:
    """``store.watch(key, wake)`` if the store announces commits, else :data:`UNWATCHED`."""
    if isinstance(store, Watchable):
        return store.watch(key, wake)
    return UNWATCHED
