"""``Listeners``: the one way agentnb tells code outside it that something happened.

Workflows (saved events), state machines (committed transitions), machine instances
(refused events) and circuit breakers (state changes) each keep one :class:`Listeners`.
The rules, the same everywhere:

* ``add(listener)`` returns a function that removes it; removing twice is harmless.
* ``notify(...)`` calls every listener in the order they were added, on a snapshot, so a
  listener may add or remove listeners (itself included) while it runs. Owners call it after
  releasing their own locks, so a listener may call back into the object that told it.
* A listener that raises does not stop the others nor the work that was going on (a metrics
  bug must not fail a refund); it is reported as a :class:`RuntimeWarning` naming the
  listener and its error, so it is never lost silently.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Generic, ParamSpec

__all__ = ["Listeners"]

P = ParamSpec("P")


class Listeners(Generic[P]):
    """The callbacks told about one kind of happening, e.g. ``Listeners[[Event]]("workflow")``.

    Args:
        what: names the source in the warning a raising listener causes.
    """

    __slots__ = ("_lock", "_snapshot", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self._lock = threading.Lock()
        self._snapshot: tuple[Callable[P, object], ...] = ()

    def add(self, listener: Callable[P, object]) -> Callable[[], None]:
        """Call ``listener`` on every notification from now on; returns its remover."""
        if not callable(listener):
            raise TypeError(f"a {self.what} listener must be callable, not {listener!r}")
        with self._lock:
            self._snapshot = (*self._snapshot, listener)
        removed = False

        def remove() -> None:
            nonlocal removed
            with self._lock:
                if removed:
                    return
                removed = True
                items = list(self._snapshot)
                items.remove(listener)  # the first of equal ones: each add has one remove
                self._snapshot = tuple(items)

        return remove

    def notify(self, *args: P.args, **kwargs: P.kwargs) -> None:
        """Call every listener with these arguments; report, never raise, what they raise."""
        for listener in self._snapshot:
            try:
                listener(*args, **kwargs)
            except Exception as exc:
                name = getattr(listener, "__qualname__", None) or repr(listener)
                warnings.warn(
                    f"{self.what} listener {name} raised {type(exc).__name__}: {exc} "
                    "(the work went on; fix the listener or remove it)",
                    RuntimeWarning,
                    stacklevel=3,
                )

    def __bool__(self) -> bool:
        return bool(self._snapshot)

    def __len__(self) -> int:
        return len(self._snapshot)

    def __iter__(self) -> Iterator[Callable[P, object]]:
        return iter(self._snapshot)

    def __contains__(self, listener: object) -> bool:
        return listener in self._snapshot

    def __repr__(self) -> str:
        return f"<Listeners of {self.what}: {len(self._snapshot)}>"
