"""Load state machines from JSON or YAML, refusing a broken file as a whole.

The file form mirrors the builder (the schema ships as ``machine.schema.json``)::

    {
      "name": "traffic_light",
      "states": ["red", "green", {"name": "yellow", "on_enter": "warn"}],
      "initial": "red",
      "transitions": [
        {"source": "red", "event": "timer", "target": "green"},
        {"source": "green", "event": "timer", "target": "yellow"},
        {"source": "yellow", "event": "timer", "target": "red", "guard": "road_clear"}
      ]
    }

Guards, actions and hooks are *names*, resolved only in the ``registry`` mapping the caller
passes — a file can never make agentnb import or run anything it names. Every problem is
reported at once, as one :class:`~agentnb.errors.SchemaError` whose ``problems`` carry JSON
paths (``$.transitions[2].target``) and fixes; nothing is built unless there are none.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from agentnb.definitions.document import (
    MAX_PROBLEMS,
    MORE_PROBLEMS,
    Document,
    Format,
    Source,
    json_path,
    parse_document,
    read_source,
)
from agentnb.definitions.findings import Finding, problem, under
from agentnb.definitions.registry import Registry, registered
from agentnb.definitions.schema import load_schema, schema_problems
from agentnb.errors import DefinitionError, SchemaError, SchemaProblem
from agentnb.fsm.machine import StateMachine
from agentnb.fsm.rules import EdgeSpec, check_edges, check_states, check_table

__all__ = ["DEFINITION_KINDS", "Registry", "load_machine", "machine_problems", "validate_file"]


DEFINITION_KINDS = {"state_machine": "machine.schema.json"}
"""The ``kind`` a definition file may declare, and its schema in this package.

``"workflow"`` (workflow graphs in the same JSON/YAML form) has its schema and loader under
``agentnb/graph``; both are read by :mod:`agentnb.definitions.document`.
"""


@functools.cache
def machine_schema() -> dict[str, Any]:
    """The state-machine JSON Schema (draft 2020-12) shipped with agentnb."""
    return load_schema("agentnb.fsm", DEFINITION_KINDS["state_machine"])


def load_machine(
    source: Source, *, registry: Registry | None = None, format: Format | None = None
) -> StateMachine:
    """Load and validate a state machine from a file, a JSON/YAML string, or bytes.

    Args:
        source: a path (``pathlib.Path``, or a ``str`` without a newline), the document
            text (a ``str`` with a newline or starting with ``{``), or its bytes.
        registry: the guards, actions and hooks the document may name.
        format: ``"json"`` or ``"yaml"``; by default from the file suffix, else sniffed.

    Raises:
        SchemaError: with every problem found; nothing is half-loaded.
        MissingDependency: ``jsonschema`` (or ``pyyaml`` for YAML) is not installed.

    Example:
        >>> m = load_machine('{"name": "m", "states": ["a", "b"], "initial": "a", '
        ...                  '"final": ["b"], "transitions": '
        ...                  '[{"source": "a", "event": "go", "target": "b"}]}')
        >>> m.decide("a", "go", {}).target
        'b'
    """
    content, label, fmt = read_source(source, format)
    return parse_machine(content, source=label, format=fmt, registry=registry)


def parse_machine(
    content: str | bytes, *, source: str, format: Format | None, registry: Registry | None
) -> StateMachine:
    """Like :func:`load_machine` for content already read (``source`` labels errors)."""
    document = parse_document(content, source=source, format=format)
    registry = registry or {}
    problems = _all_problems(document, registry)
    if problems:
        raise SchemaError(problems, source=source)
    return _build(document.data, registry, source)


def validate_file(
    path: Source, *, registry: Registry | None = None, format: Format | None = None
) -> list[SchemaProblem]:
    """Every problem in a definition file (empty when it is valid); never raises for content.

    Without ``registry``, guard/action/hook names are checked for form only — the command
    line cannot know the functions a program will register.

    Example:
        >>> from agentnb.fsm import validate_file
        >>> validate_file('{"name": "m", "states": ["a"], "initial": "a", "final": ["a"]}')
        []
        >>> [problem.path for problem in validate_file('{"name": "m", "states": ["a"]}')]
        ['$.initial']
    """
    try:
        content, label, fmt = read_source(path, format)
        document = parse_document(content, source=label, format=fmt)
    except SchemaError as error:
        return error.problems
    return _all_problems(document, registry)


def _all_problems(document: Document, registry: Registry | None) -> list[SchemaProblem]:
    # A value already reported while reading (e.g. a YAML date, now null) would be
    # reported again by the schema at the same path in vaguer words.
    seen = {p.path for p in document.problems}
    later = machine_problems(document.data, registry=registry, known=document.problems)
    problems = [*document.problems, *(p for p in later if p.path not in seen)]
    if len(problems) > MAX_PROBLEMS:
        problems = [*problems[:MAX_PROBLEMS], MORE_PROBLEMS]
    return list(dict.fromkeys(problems))


def machine_problems(
    data: Any, *, registry: Registry | None, known: Iterable[SchemaProblem] = ()
) -> list[SchemaProblem]:
    """Schema violations, then the rules the schema cannot express, for parsed ``data``.

    A rule that depends on a part with a problem (``known`` ones included) is skipped: its
    complaint would only repeat the first one in other words. Whole-graph rules
    (reachability, dead ends) run only once everything else is sound. ``registry`` ``None``
    skips name resolution.
    """
    problems, complete = schema_problems(data, machine_schema())
    if not isinstance(data, dict) or not complete:
        # Past the cap, parts without a listed problem were not all checked.
        return problems
    broken = {p.path for p in problems} | {p.path for p in known}
    semantic = _reference_problems(data, registry) if registry is not None else []
    if not any(under(b, part) for b in broken for part in ("$.states", "$.initial", "$.final")):
        semantic += [problem(f) for f in _table_findings(data, broken)]
    return problems + [p for p in dict.fromkeys(semantic) if p.path not in broken]


def _state_name(item: Any) -> str | None:
    name = item.get("name") if isinstance(item, dict) else item
    return name if isinstance(name, str) else None


def _table_findings(data: dict[str, Any], broken: set[str]) -> list[Finding]:
    # The schema vouches for these shapes; the checks below keep a drift between the two
    # from ever becoming a KeyError instead of a SchemaError.
    raw_states, initial, final = data.get("states"), data.get("initial"), data.get("final", [])
    if not (isinstance(raw_states, list) and isinstance(initial, str)):
        return []
    states = [_state_name(s) for s in raw_states]
    if not isinstance(final, list) or not all(isinstance(n, str) for n in [*states, *final]):
        return []
    names = [n for n in states if n is not None]
    transitions = data.get("transitions", [])
    listed = isinstance(transitions, list)
    edges: list[EdgeSpec] = []
    for i, t in enumerate(transitions if listed else []):
        edge = _edge(i, t)
        if edge is not None and not any(under(b, f"$.transitions[{i}]") for b in broken):
            edges.append(edge)
    if listed and not broken:
        return check_table(names, initial, final, edges)
    return check_states(names, initial, final) + check_edges(edges, set(names), set(final))


def _edge(index: int, item: Any) -> EdgeSpec | None:
    if not isinstance(item, dict):
        return None
    source, event, target = item.get("source"), item.get("event"), item.get("target")
    if isinstance(source, str) and isinstance(event, str) and isinstance(target, str):
        return EdgeSpec(index, source, event, target, "guard" in item)
    return None


def _references(data: dict[str, Any]) -> list[tuple[list[str | int], str, str]]:
    """``(path, role, name)`` for every registry name the document uses."""
    refs: list[tuple[list[str | int], str, str]] = []
    for key, roles in (("states", ("on_enter", "on_exit")), ("transitions", ("guard", "action"))):
        items = data.get(key)
        for i, item in enumerate(items if isinstance(items, list) else []):
            for role in roles:
                name = item.get(role) if isinstance(item, dict) else None
                if isinstance(name, str):
                    refs.append(([key, i, role], role, name))
    return refs


def _reference_problems(data: dict[str, Any], registry: Registry) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    known = registered(registry)
    for path, role, name in _references(data):
        if name not in registry:
            problems.append(
                SchemaProblem(
                    json_path(path),
                    f"unknown {role} {name!r}: it is not in the registry",
                    f"Pass registry={{{name!r}: your_function}} to load_machine (registered: "
                    f"{known}); names are never imported",
                )
            )
        elif not callable(registry[name]):
            problems.append(
                SchemaProblem(
                    json_path(path),
                    f"registry entry {name!r} used as {role} is a "
                    f"{type(registry[name]).__name__}, not a function",
                    "Map the name to a function taking (context, payload)",
                )
            )
    return problems


def _build(data: dict[str, Any], registry: Registry, source: str) -> StateMachine:
    try:
        machine = StateMachine(
            data["name"],
            [s if isinstance(s, str) else s["name"] for s in data["states"]],
            data["initial"],
            data.get("final", []),
            description=data.get("description", ""),
        )
        for state in data["states"]:
            if isinstance(state, dict):
                if "on_enter" in state:
                    machine.on_enter(state["name"], registry[state["on_enter"]])
                if "on_exit" in state:
                    machine.on_exit(state["name"], registry[state["on_exit"]])
        for t in data.get("transitions", []):
            machine.add_transition(
                t["source"],
                t["event"],
                t["target"],
                guard=registry[t["guard"]] if "guard" in t else None,
                action=registry[t["action"]] if "action" in t else None,
                label=t.get("label"),
            )
        machine.validate()
    except DefinitionError as error:
        # The checks above mirror the builder's rules, so this means they drifted apart;
        # still refuse the file the documented way.
        raise SchemaError([SchemaProblem("$", error.problem, error.fix)], source=source) from error
    return machine
