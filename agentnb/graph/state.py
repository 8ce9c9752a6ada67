"""Workflow state: a JSON dict, changed only through deltas merged by reducers.

A node returns a *delta* (a dict of changed keys). Each key is merged by its reducer:
``messages`` appends by default, every other key replaces, and a graph can register its
own reducer per key (``StateGraph(reducers={"total": operator.add})``).

State is stored as JSON, so the runtime checks every delta before anything is saved and
names the offending key path. Nodes always receive a fresh copy, each key copied through
JSON when first read (:class:`~agentnb.graph.copies.StateCopy`): they cannot change the
run's state behind the runtime's back, and what a node sees in a live process is exactly
what it would see after a restart (tuples arrive as lists).
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentnb._json import INT_BITS, dumps, loads, surrogate
from agentnb.errors import ConflictingUpdate, DefinitionError, InvalidState

__all__ = [
    "DEFAULT_REDUCERS",
    "Reducer",
    "append",
    "apply_delta",
    "defaults_of",
    "json_copy",
    "merge_writes",
    "reducers_of",
    "replace",
]

Reducer = Callable[[Any, Any], Any]
"""``reducer(current, new) -> merged``; ``current`` is ``None`` when the key is unset."""


def replace(current: Any, new: Any) -> Any:
    """The default reducer: the new value replaces the old one."""
    return new


def append(current: Any, new: Any) -> Any:
    """Append a list (or one item) to the current list; the reducer of ``messages``."""
    items = list(new) if isinstance(new, list | tuple) else [new]
    return [*current, *items] if current else items


DEFAULT_REDUCERS: Mapping[str, Reducer] = {"messages": append}


def reducers_of(schema: type) -> dict[str, Reducer]:
    """The reducers a LangGraph-style state schema declares, by key.

    A key annotated ``Annotated[T, reducer]`` (a ``TypedDict``, dataclass or any class
    with annotations) merges with ``reducer``; as in LangGraph, an unset key starts from
    ``T()`` (``[]`` for ``list[str]``, ``0`` for ``int``). Other keys replace. The keys
    themselves are not enforced.

    Example:
        >>> import operator
        >>> from typing import Annotated, TypedDict
        >>> State = TypedDict("State", {"docs": Annotated[list[str], operator.add], "topic": str})
        >>> reducers = reducers_of(State)
        >>> sorted(reducers), reducers["docs"](None, ["a"])
        (['docs'], ['a'])
    """
    try:
        hints = typing.get_type_hints(schema, include_extras=True)
    except Exception as exc:  # a name the annotations use is not importable from there
        raise DefinitionError(
            f"the state schema {schema.__name__!r} has annotations that do not resolve "
            f"({type(exc).__name__}: {exc})",
            culprit=schema.__name__,
            fix="Define the schema at module level, with the names its annotations use "
            "(Annotated, the reducers) imported there.",
        ) from None
    found: dict[str, Reducer] = {}
    for key, hint in hints.items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *extras = typing.get_args(hint)
        declared = [extra for extra in extras if callable(extra) and not isinstance(extra, type)]
        if declared:
            found[key] = _seeded(declared[-1], typing.get_origin(base) or base)
    return found


def defaults_of(schema: type) -> dict[str, Any]:
    """What each reducer key of a LangGraph-style schema holds before it is written:
    ``T()`` for ``Annotated[T, reducer]`` (``[]``, ``0``), as LangGraph's channels start.

    A run's first state is these, with the input merged in through the reducers; a type
    that cannot be built without arguments has no default (the key stays unset).

    Example:
        >>> import operator
        >>> from typing import Annotated, TypedDict
        >>> State = TypedDict("State", {"docs": Annotated[list[str], operator.add], "n": int})
        >>> defaults_of(State)
        {'docs': []}
    """
    hints = typing.get_type_hints(schema, include_extras=True)  # reducers_of checked them
    found: dict[str, Any] = {}
    for key, hint in hints.items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *extras = typing.get_args(hint)
        if not any(callable(extra) and not isinstance(extra, type) for extra in extras):
            continue
        made = typing.get_origin(base) or base
        if isinstance(made, type):
            try:
                found[key] = json_copy(made())
            except Exception:  # needs arguments, or is not JSON: no default
                continue
    return found


def _seeded(reducer: Reducer, base: object) -> Reducer:
    """``reducer``, called with ``base()`` instead of ``None`` for a key not set yet; a
    key whose type cannot be built without arguments (``Any``, ``Optional[list]``) takes
    its first value as it is, the reducer not called — as LangGraph's channel does."""

    def merge(current: Any, new: Any) -> Any:
        if current is None:
            if not isinstance(base, type):
                return new
            try:
                current = base()
            except Exception:  # a type with required arguments: no default either
                return new
        return reducer(current, new)

    merge.__name__ = getattr(reducer, "__name__", "reducer")
    merge.__doc__ = getattr(reducer, "__doc__", None)
    return merge


ATOMS = (str, int, float, bool, type(None))


def json_copy(value: Any) -> Any:
    """``value`` as it comes back from JSON: a deep copy (atoms are returned as they are,
    once known to be storable: an int JSON can read back, a str without lone surrogates).

    Raises:
        InvalidState: ``value`` cannot be stored as JSON.
    """
    kind = type(value)
    if kind in ATOMS:
        if kind is str:
            if value.isascii() or not surrogate(value):
                return value
        elif kind is float:
            if math.isfinite(value):  # NaN and Infinity go to dumps, which refuses them
                return value
        elif kind is not int or value.bit_length() <= INT_BITS:
            return value
    return loads(dumps(value))


def apply_delta(
    state: dict[str, Any], delta: Mapping[str, Any], reducers: Mapping[str, Reducer]
) -> dict[str, Any]:
    """Return a new state with ``delta`` merged into ``state`` by each key's reducer.

    ``state`` and everything in it are left as they are: the new dict shares the values
    the delta did not change. A custom reducer gets a JSON copy of the current value (it
    may change it in place), and its result goes through JSON, so the state stays what
    the store gives back.
    """
    if not reducers or reducers.keys().isdisjoint(delta):
        return {**state, **delta}  # every key replaces: one C-level merge
    merged = dict(state)
    for key, value in delta.items():
        reducer = reducers.get(key, replace)
        if reducer is replace:
            merged[key] = value
        elif reducer is append:
            merged[key] = append(state.get(key), value)
        else:
            merged[key] = _reduced(key, reducer(json_copy(state.get(key)), value))
    return merged


def _reduced(key: str, result: Any) -> Any:
    """A custom reducer's ``result`` for ``key``, as JSON gives it back.

    Raises:
        InvalidState: the result cannot be stored, its path under ``state[key]``.
    """
    try:
        return json_copy(result)
    except InvalidState as exc:
        where = f"state[{key!r}]{exc.path.removeprefix('state')}"
        raise InvalidState(where, f"{exc.reason} (as the reducer of {key!r} merged it)") from None


def merge_writes(
    state: dict[str, Any],
    writes: Sequence[tuple[str, Mapping[str, Any]]],
    reducers: Mapping[str, Reducer],
    *,
    run_id: str = "?",
    step: int = 0,
    replacing: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Merge the deltas of one superstep, ``(task id, delta)`` in merge order.

    Each delta goes through the reducers in turn, so the result does not depend on which
    task finished first. A key written by two tasks must have a reducer.

    The tasks in ``replacing`` (subgraphs, which merged with the reducers already) set
    their keys' values as they are.

    Raises:
        ConflictingUpdate: two tasks wrote a key that has no reducer.
    """
    writer: dict[str, str] = {}
    for task, delta in writes:
        for key in delta:
            if key in reducers:
                continue
            first = writer.setdefault(key, task)
            if first != task:
                raise ConflictingUpdate(run_id, key, (first, task), step)
    merged = state
    for task, delta in writes:
        merged = apply_delta(merged, delta, {} if task in replacing else reducers)
    return merged
