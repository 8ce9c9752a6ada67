"""What a workflow file names and the registry resolves: functions, routers, reducers, errors.

The loader asks here which names a document uses (:func:`references`), which of them the
registry cannot supply (:func:`reference_problems`), and — for drawing a file without its
code — stand-ins that refuse to run (:func:`placeholders`). Names are only ever looked up
in the registry (exception names also among Python's built-ins): never imported.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from typing import Any

from agentnb._json import json_path
from agentnb.definitions.findings import Path, sound
from agentnb.definitions.names import suggest
from agentnb.definitions.registry import Registry
from agentnb.errors import DefinitionError, SchemaProblem
from agentnb.graph.builder import RESERVED

__all__ = [
    "Registry",
    "Unregistered",
    "items",
    "nodes",
    "placeholders",
    "reference_problems",
    "references",
    "resolve",
    "sound",
    "targets",
]


def items(data: dict[str, Any], key: str, broken: Iterable[str] = ()) -> list[tuple[int, Any]]:
    """The objects listed under ``key``, with their indexes; none with a problem in ``broken``."""
    value = data.get(key)
    items = enumerate(value if isinstance(value, list) else [])
    return [(i, v) for i, v in items if isinstance(v, dict) and sound(broken, key, i)]


def nodes(data: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """``(path of the node's name, its object form)`` for each node with a string name."""
    out: list[tuple[Path, dict[str, Any]]] = []
    raw = data.get("nodes")
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        spec = {"name": item} if isinstance(item, str) else item
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            out.append((("nodes", i) if isinstance(item, str) else ("nodes", i, "name"), spec))
    return out


def targets(value: Any) -> list[tuple[str | int, str]]:
    """``(key or index, name)`` for each string in a mapping or a list."""
    items = value if isinstance(value, list) else []
    pairs = value.items() if isinstance(value, dict) else enumerate(items)
    return [(key, target) for key, target in pairs if isinstance(target, str)]


def references(data: Any) -> list[tuple[Path, str, str]]:
    """``(path, role, name)`` for every name the document asks the registry for."""
    if not isinstance(data, dict):
        return []
    refs: list[tuple[Path, str, Any]] = []
    for path, spec in nodes(data):
        if spec["name"] in RESERVED:
            continue  # not a node: reported as such
        if "subgraph" in spec:
            refs.append(((*path[:2], "subgraph"), "subgraph", spec["subgraph"]))
        else:
            fn_path = (*path[:2], "fn") if "fn" in spec else path
            refs.append((fn_path, "function", spec.get("fn", spec["name"])))
        retried = spec["retry"].get("exceptions") if isinstance(spec.get("retry"), dict) else None
        refs += [
            ((*path[:2], "retry", "exceptions", j), "exception", n) for j, n in targets(retried)
        ]
    for k, branch in items(data, "conditional_edges"):
        refs.append((("conditional_edges", k, "router"), "router", branch.get("router")))
    reducers = data.get("reducers")
    refs += [(("reducers", key), "reducer", n) for key, n in targets(reducers)]
    return [(path, role, name) for path, role, name in refs if isinstance(name, str)]


def exception_type(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def resolve(role: str, name: str, registry: Registry) -> Any:
    if role == "exception" and name not in registry:
        found = getattr(builtins, name, None)  # a built-in, never an import
        return found if exception_type(found) else None
    return registry.get(name)


def is_graph(value: Any) -> bool:
    """A ``StateGraph``, or a compiled ``Workflow`` (which keeps its graph)."""
    from agentnb.graph.builder import StateGraph

    return isinstance(value, StateGraph) or isinstance(getattr(value, "graph", None), StateGraph)


WANTED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "function": (callable, "a function fn(state) or fn(state, ctx)"),
    "subgraph": (is_graph, "a StateGraph or a compiled Workflow"),
    "router": (callable, "a function router(state) -> outcome"),
    "reducer": (callable, "a function reducer(current, new) -> merged value"),
    "exception": (exception_type, "an exception class"),
}


def reference_problems(data: Any, registry: Registry) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    for path, role, name in references(data):
        value = resolve(role, name, registry)
        fits, wanted = WANTED[role]
        if value is None and name not in registry:
            builtin = " nor a built-in exception" if role == "exception" else ""
            message = f"unknown {role} {name!r}: it is not in the registry{builtin}"
            fix = (
                f"Pass registry={{{name!r}: ...}} to load_workflow ("
                f"{suggest(name, registry, 'names')}); names are never imported"
            )
        elif not fits(value):
            kind = type(value).__name__
            message = f"registry entry {name!r} used as {role} is a {kind}, not {wanted}"
            fix = f"Map {name!r} to {wanted}"
        else:
            continue
        problems.append(SchemaProblem(json_path(path), message, fix))
    return problems


class Unregistered(Exception):
    """Stands, in a graph loaded for drawing only (:func:`placeholders`), for each
    exception a file names that is not built in: nothing raises it."""


def placeholders(data: Any, source: str) -> dict[str, Any]:
    registry: dict[str, Any] = {}
    for _, role, name in references(data):
        if role == "exception":
            registry[name] = resolve(role, name, {}) or Unregistered
        elif role == "subgraph" and name not in registry:
            from agentnb.graph.builder import StateGraph

            inner = StateGraph(name).add_node(name, _placeholder("function", name, source))
            registry[name] = inner.set_entry_point(name)
        elif name not in registry:
            registry[name] = _placeholder(role, name, source)
    return registry


def _placeholder(role: str, name: str, source: str) -> Callable[..., Any]:
    def placeholder(*args: Any) -> Any:
        raise DefinitionError(
            f"{role} {name!r} is a placeholder: {source} was loaded for drawing only",
            culprit=name,
            fix=f"Load it with load_workflow(path, registry={{{name!r}: ...}}) to run it",
        )

    placeholder.__name__ = placeholder.__qualname__ = name
    return placeholder
