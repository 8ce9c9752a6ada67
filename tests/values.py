"""A tripwire for the records that are values without being frozen.

The records a step builds (``agentnb.store.records``' docstring says which and why) are
``@dataclass(slots=True)`` without ``frozen``; agentnb never assigns a field of one after
building it. :func:`refusing_reassignment` makes that checked: while it is on, a
record's constructor (and ``copy``/``pickle``, which fill an empty one) may set each
field once, and any later assignment or deletion raises :class:`Reassigned`. The whole
suite runs with it on (``tests/conftest.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentnb.store.chains import Chain
from agentnb.store.records import Event, RunRecord
from agentnb.store.writes import CheckpointWrite, StepCommit

UNFROZEN: tuple[type, ...] = (Event, RunRecord, StepCommit, CheckpointWrite, Chain)


class Reassigned(AssertionError):
    """A field of a record was assigned (or deleted) after the record was built."""


def _set_once(self: object, name: str, value: Any) -> None:
    try:
        object.__getattribute__(self, name)
    except AttributeError:  # an empty slot: the constructor (or copy, pickle) filling it
        object.__setattr__(self, name, value)
        return
    raise Reassigned(f"{type(self).__name__}.{name} assigned after the record was built")


def _never_delete(self: object, name: str) -> None:
    raise Reassigned(f"{type(self).__name__}.{name} deleted after the record was built")


@contextmanager
def refusing_reassignment(classes: tuple[type, ...] = UNFROZEN) -> Iterator[None]:
    """While on, each of ``classes`` refuses a second assignment of a field."""
    for cls in classes:
        assert "__setattr__" not in vars(cls), f"{cls.__name__} has its own __setattr__"
        cls.__setattr__ = _set_once  # type: ignore[assignment]
        cls.__delattr__ = _never_delete  # type: ignore[assignment]
    try:
        yield
    finally:
        for cls in classes:
            del cls.__setattr__
            del cls.__delattr__
