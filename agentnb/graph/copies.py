"""The copies of a run's state that nodes and routers get: each key copied when first read.

The runtime keeps the run's live state in the process while it holds the lease, and never
changes a state dict (or anything in it) once built: a step makes a new dict that shares
the values it did not change (see :func:`~agentnb.graph.state.apply_delta`). A node gets
a :class:`StateCopy` of it — a real ``dict`` whose values are JSON copies, made the first
time each key is read. A node that reads only a counter does not pay for copying a
2,000-message history; a node that reads everything pays what a full copy costs; and
nothing a node does to its input (in place, nested, from a thread) reaches the run's state.

What a node sees is exactly what it would see after a restart: values pass through JSON
(tuples arrive as lists), as the stored state does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from agentnb.graph.state import ATOMS, json_copy

__all__ = ["StateCopy", "json_copy"]


class _Unread:
    """Stands in the dict for a value not copied yet (every read path copies it first)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<not copied yet>"


_UNREAD: Any = _Unread()
_ATOMS = frozenset(ATOMS)


class StateCopy(dict[str, Any]):
    """A ``dict`` copy of ``source`` (plus ``extra`` on top) whose values are copied on first
    read. Bulk reads (``items()``, ``values()``, ``==``, ``repr``, ``copy``, pickling,
    ``json.dumps``) copy every value first, so they see a plain dict's contents."""

    __slots__ = ("_source",)

    def __init__(self, source: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> None:
        # A C-level copy, then a stand-in for each value to copy on first read: a node's
        # input is built every step, and most of a state's values are often atoms.
        dict.__init__(self, source)
        atoms, unread, put = _ATOMS, _UNREAD, dict.__setitem__
        for key, value in source.items():
            if type(value) not in atoms:
                put(self, key, unread)
        self._source = source
        if extra:
            put = dict.__setitem__
            for key, value in extra.items():
                put(self, key, json_copy(value))

    def __getitem__(self, key: str) -> Any:
        value = dict.__getitem__(self, key)
        if value is _UNREAD:
            value = json_copy(self._source[key])
            dict.__setitem__(self, key, value)
        return value

    def _read_all(self) -> None:
        for key, value in list(dict.items(self)):
            if value is _UNREAD:
                dict.__setitem__(self, key, json_copy(self._source[key]))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default  # noqa: SIM401 (get would recurse)

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            value = self[key]
            dict.__delitem__(self, key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, Any]:
        self._read_all()
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        dict.__setitem__(self, key, default)
        return default

    def __iter__(self) -> Iterator[str]:
        # Defined so that dict(copy), {**copy} and f(**copy) go through __getitem__.
        return dict.__iter__(self)

    def values(self) -> Any:
        self._read_all()
        return dict.values(self)

    def items(self) -> Any:
        self._read_all()
        return dict.items(self)

    def copy(self) -> dict[str, Any]:
        self._read_all()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._read_all()
        if isinstance(other, StateCopy):
            other._read_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __or__(self, other: Any) -> Any:
        return self.copy() | other

    def __ror__(self, other: Any) -> Any:
        return dict(other) | self.copy()

    def __repr__(self) -> str:
        self._read_all()
        return dict.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.copy(),))
