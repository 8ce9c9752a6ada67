"""Load workflow graphs from JSON or YAML, refusing a broken file as a whole.

The form mirrors :class:`~agentnb.graph.builder.StateGraph` and the state-machine files of
:mod:`agentnb.fsm.loader`; its schema ships as ``workflow.schema.json``::

    kind: workflow                 # required: files without it are state machines
    name: refund
    entry: planner
    max_steps: 25
    nodes:
      - {name: planner, fn: plan, description: decide what to refund}
      - human_approval             # a bare name runs the registry entry of that name
      - {name: refund, timeout: 5, retry: {attempts: 3, exceptions: [TimeoutError]}, breaker: pay}
    edges: [{source: human_approval, target: refund}, {source: refund, target: END}]
    conditional_edges:
      - {source: planner, router: route, targets: {needs_approval: human_approval, small: refund}}
    interrupt_before: [{node: human_approval, approvers: [ada, "group:finance"]}]
    breakers: {pay: {failures: 3, reset_after: 30}}
    reducers: {total: add}

Functions, routers, reducers and retried exceptions are *names*, resolved only in the
``registry`` the caller passes (exceptions may also be built-in exception names): a file can
never make agentnb import or run anything it names. Every problem is reported at once, as
one :class:`~agentnb.errors.SchemaError` with JSON paths (``$.edges[1].target``) and fixes;
nothing is built unless there are none.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeAlias

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
from agentnb.definitions.findings import Path, sound
from agentnb.definitions.names import suggest
from agentnb.definitions.registry import Registry
from agentnb.definitions.schema import load_schema, schema_problems
from agentnb.errors import DefinitionError, SchemaError, SchemaProblem
from agentnb.graph.builder import RESERVED, StateGraph
from agentnb.graph.registry import items, nodes, placeholders, reference_problems, resolve
from agentnb.graph.rules import check_graph
from agentnb.resilience import CircuitBreaker, Retry

__all__ = [
    "DefinitionKind",
    "LoadedGraph",
    "Registry",
    "definition_file_kind",
    "definition_kind",
    "load_workflow",
    "outline_workflow",
    "parse_workflow",
    "validate_workflow_file",
    "workflow_problems",
    "workflow_schema",
]

DefinitionKind: TypeAlias = Literal["workflow", "state_machine"]


@functools.cache
def workflow_schema() -> dict[str, Any]:
    """The workflow JSON Schema (draft 2020-12) shipped with agentnb."""
    return load_schema("agentnb.graph", "workflow.schema.json")


class LoadedGraph(StateGraph):
    """A :class:`StateGraph` read from a file, whose ``max_steps`` ``compile()`` uses.

    ``source`` names the file and ``digest`` (SHA-256 of its bytes) its version.

    Example:
        >>> from agentnb.graph import LoadedGraph, load_workflow
        >>> graph = load_workflow('{"kind": "workflow", "name": "hi", "entry": "greet", '
        ...                       '"nodes": ["greet"], "max_steps": 5}',
        ...                       registry={"greet": lambda state: {}})
        >>> isinstance(graph, LoadedGraph), graph.compile().max_steps
        (True, 5)
    """

    description: str = ""
    source: str = ""
    digest: str = ""


# -- entry points ------------------------------------------------------------------------


def load_workflow(
    source: Source, *, registry: Registry, format: Format | None = None
) -> LoadedGraph:
    """Load and validate a workflow graph from a file, a JSON/YAML string, or bytes.

    Args:
        source: a path (``pathlib.Path``, or a ``str`` without a newline), the document
            text (a ``str`` with a newline or starting with ``{``), or its bytes.
        registry: the node functions, routers, reducers and exception types the
            document may name.
        format: ``"json"`` or ``"yaml"``; by default from the file suffix, else sniffed.

    Raises:
        SchemaError: with every problem found; nothing is half-loaded.
        MissingDependency: ``jsonschema`` (or ``pyyaml`` for YAML) is not installed.

    Example:
        >>> g = load_workflow('{"kind": "workflow", "name": "hi", "entry": "greet", '
        ...                   '"nodes": ["greet"]}', registry={"greet": lambda s: {"x": 1}})
        >>> g.compile().invoke().state
        {'x': 1}
    """
    content, label, fmt = read_source(source, format)
    return parse_workflow(content, source=label, format=fmt, registry=registry)


def parse_workflow(
    content: str | bytes, *, source: str, format: Format | None, registry: Registry
) -> LoadedGraph:
    """Like :func:`load_workflow` for content already read (``source`` labels errors)."""
    document = parse_document(content, source=source, format=format)
    problems, graph = _examine(document, registry)
    if graph is None:
        raise SchemaError(problems, source=source)
    return graph


def outline_workflow(source: Source, *, format: Format | None = None) -> LoadedGraph:
    """The graph a file describes, for drawing (``agentnb draw``): structure only.

    Without a registry, every function, router and reducer the file names becomes a
    placeholder of that name that raises if it is ever called, and each exception name
    that is not built in a placeholder type.

    Raises:
        SchemaError: the file is unreadable or breaks the schema or the graph rules.
    """
    content, label, fmt = read_source(source, format)
    document = parse_document(content, source=label, format=fmt)
    problems, graph = _examine(document, placeholders(document.data, label))
    if graph is None:
        raise SchemaError(problems, source=label)
    return graph


def validate_workflow_file(
    path: Source, *, registry: Registry | None = None, format: Format | None = None
) -> list[SchemaProblem]:
    """Every problem in a workflow file (empty when it is valid); never raises for content.

    Without ``registry``, the names of functions, routers, reducers and exceptions are
    checked for form only — the command line cannot know what a program will register.

    Example:
        >>> from agentnb.graph import validate_workflow_file
        >>> good = '{"kind": "workflow", "name": "w", "entry": "a", "nodes": ["a"]}'
        >>> validate_workflow_file(good)
        []
        >>> [problem.path for problem in validate_workflow_file('{"kind": "workflow"}')]
        ['$.name', '$.entry', '$.nodes']
    """
    try:
        content, label, fmt = read_source(path, format)
        document = parse_document(content, source=label, format=fmt)
    except SchemaError as error:
        return error.problems
    return _examine(document, registry)[0]


def definition_kind(data: Any) -> DefinitionKind:
    """Which loader a parsed definition document is for: its top-level ``kind``.

    ``"workflow"`` files say so; anything else is a state machine (whose ``kind`` is
    optional). A document with ``nodes`` but neither ``kind`` nor ``states`` is taken
    as a workflow that forgot its ``kind``, so that the workflow schema explains it.
    """
    if isinstance(data, dict):
        kind = data.get("kind")
        if kind == "workflow" or (kind is None and "nodes" in data and "states" not in data):
            return "workflow"
    return "state_machine"


def definition_file_kind(source: Source, *, format: Format | None = None) -> DefinitionKind:
    """:func:`definition_kind` of a file; ``"state_machine"`` when it cannot be read."""
    try:
        content, label, fmt = read_source(source, format)
        return definition_kind(parse_document(content, source=label, format=fmt).data)
    except SchemaError:
        return "state_machine"


# -- problems ----------------------------------------------------------------------------


def _examine(
    document: Document, registry: Registry | None
) -> tuple[list[SchemaProblem], LoadedGraph | None]:
    """Every problem in ``document``; and when there is none and a registry, the graph."""
    # A value already reported while reading (e.g. a YAML date, now null) would be
    # reported again by the schema at the same path in vaguer words.
    seen = {p.path for p in document.problems}
    later = _problems(document.data, registry, document.problems)
    problems = [*document.problems, *(p for p in later if p.path not in seen)]
    if problems or registry is None:
        if len(problems) > MAX_PROBLEMS:
            problems = [*problems[:MAX_PROBLEMS], MORE_PROBLEMS]
        return list(dict.fromkeys(problems)), None
    graph, problems = _build(document.data, registry, document.source, document.digest)
    return problems, graph


def workflow_problems(
    data: Any, *, registry: Registry | None, known: Iterable[SchemaProblem] = ()
) -> list[SchemaProblem]:
    """Schema violations, then the rules the schema cannot express, for parsed ``data``.

    A rule that depends on a part with a problem (``known`` ones included) is skipped: its
    complaint would only repeat the first one in other words. Reachability runs only once
    everything else is sound. ``registry`` ``None`` skips name resolution; with one, a
    sound document also goes through the builder (which refuses, say, a function with the
    wrong signature).
    """
    problems = _problems(data, registry, known)
    if problems or registry is None:
        return problems
    return _build(data, registry, "", "")[1]


def _problems(
    data: Any, registry: Registry | None, known: Iterable[SchemaProblem]
) -> list[SchemaProblem]:
    problems, complete = schema_problems(data, workflow_schema())
    if not isinstance(data, dict) or not complete:
        return problems  # past the cap, parts without a listed problem were not all checked
    broken = {p.path for p in problems} | {p.path for p in known}
    semantic = _structure_problems(data, broken)
    if registry is not None:
        semantic += reference_problems(data, registry)
    return problems + [p for p in dict.fromkeys(semantic) if p.path not in broken]


# Problems at these paths leave the node names (or the entry) unknown.
_NAMING = re.compile(r"\$\.(entry|nodes(\[\d+\](\.name)?)?)")


def _structure_problems(data: dict[str, Any], broken: set[str]) -> list[SchemaProblem]:
    """The graph rules of :mod:`agentnb.graph.rules`, and the names the builder refuses."""
    if any(_NAMING.fullmatch(b) for b in broken):
        return []  # the set of nodes is uncertain: references to it cannot be judged
    problems: list[SchemaProblem] = []
    if isinstance(data.get("name"), str) and data["name"] in RESERVED:
        fix = "Name the workflow for what it does"
        problems.append(SchemaProblem("$.name", f"{data['name']!r} is reserved", fix))
    breakers = data.get("breakers", {})
    for path, spec in nodes(data):
        breaker = spec.get("breaker")
        if isinstance(breaker, str) and isinstance(breakers, dict) and breaker not in breakers:
            fix = f'Declare it under "breakers". {suggest(breaker, breakers, "breakers")}'
            at = json_path((*path[:2], "breaker"))
            problems.append(SchemaProblem(at, f"breaker {breaker!r} is not declared", fix))
    # Parts with a problem of their own are left out; the schema vouches for the rest.
    before, after = (
        list(enumerate(_interrupt_nodes(data.get(key, [])) if sound(broken, key) else []))
        for key in ("interrupt_before", "interrupt_after")
    )
    edges = list(items(data, "edges", broken))
    findings = check_graph(
        [spec["name"] for _, spec in nodes(data)],
        data["entry"],
        [(i, e["source"], e["target"]) for i, e in edges if isinstance(e["source"], str)],
        [(k, b["source"], b["targets"]) for k, b in items(data, "conditional_edges", broken)],
        before,
        after,
        complete=not (problems or broken),
        joins=[(i, e["source"], e["target"]) for i, e in edges if isinstance(e["source"], list)],
    )
    for f in findings:
        # A node given as a bare string is its own name: $.nodes[1], not $.nodes[1].name.
        name = f.path[0] == "nodes" and f.path[2:] == ("name",)
        bare = name and isinstance(data["nodes"][f.path[1]], str)
        problems.append(SchemaProblem(json_path(f.path[:2] if bare else f.path), f.message, f.fix))
    return problems


# -- building ----------------------------------------------------------------------------


def _build(
    data: dict[str, Any], registry: Registry, source: str, digest: str
) -> tuple[LoadedGraph | None, list[SchemaProblem]]:
    """The graph, through the builder; a builder refusal becomes a problem at its path."""
    problems: list[SchemaProblem] = []

    def attempt(path: Path, step: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        try:
            step(*args, **kwargs)
        except DefinitionError as error:
            problems.append(SchemaProblem(json_path(path), error.problem, error.fix))

    # JSON Schema's integers include 3.0: int() keeps the builder's isinstance checks happy.
    breakers = {
        name: CircuitBreaker(
            name, failures=int(b.get("failures", 5)), reset_after=float(b.get("reset_after", 30))
        )
        for name, b in data.get("breakers", {}).items()
    }
    reducers = {key: registry[name] for key, name in data.get("reducers", {}).items()}
    graph = LoadedGraph(data["name"], reducers=reducers, max_steps=int(data.get("max_steps", 25)))
    graph.description, graph.source, graph.digest = data.get("description", ""), source, digest
    for path, spec in nodes(data):
        # "fn" belongs to a function node; "input_keys"/"output_keys" to a subgraph node.
        keys = ("fn", "input_keys", "output_keys")
        stray = [k for k in keys if k in spec and (k == "fn") == ("subgraph" in spec)]
        if stray:
            at = json_path((*path[:2], stray[0]))
            fix = 'Give a node "fn", or "subgraph" with its "input_keys"/"output_keys"'
            problems.append(SchemaProblem(at, f"{stray[0]!r} does not fit this node", fix))
            continue
        if "subgraph" in spec:
            attempt(
                (*path[:2], "subgraph"),
                graph.add_node,
                spec["name"],
                registry[spec["subgraph"]],
                description=spec.get("description"),
                input_keys=spec.get("input_keys"),
                output_keys=spec.get("output_keys"),
            )
            continue
        attempt(
            (*path[:2], "fn") if "fn" in spec else path,
            graph.add_node,
            spec["name"],
            registry[spec.get("fn", spec["name"])],
            description=spec.get("description"),
            timeout=spec.get("timeout"),
            retry=_retry(spec.get("retry"), registry),
            breaker=breakers.get(spec.get("breaker", "")),
        )
    graph.set_entry_point(data["entry"])
    for i, edge in enumerate(data.get("edges", [])):
        attempt(("edges", i), graph.add_edge, edge["source"], edge["target"])
    for k, b in enumerate(data.get("conditional_edges", [])):
        branch = (b["source"], registry[b["router"]], b["targets"])
        attempt(("conditional_edges", k), graph.add_conditional_edge, *branch)
    for key, declare in (
        ("interrupt_before", graph.add_interrupt_before),
        ("interrupt_after", graph.add_interrupt_after),
    ):
        for i, item in enumerate(data.get(key, [])):
            spec = {"node": item} if isinstance(item, str) else item
            approvers = spec.get("approvers")
            attempt(
                (key, i),
                declare,
                spec["node"],
                approvers=None if approvers is None else frozenset(approvers),
                separate_duties=spec.get("separate_duties", False),
            )
    if not problems:
        # The same rules ran above, so a refusal here means something was left out of them;
        # still refuse the file the documented way.
        attempt((), graph.compile)
    return (None if problems else graph), problems


def _interrupt_nodes(items: list[Any]) -> list[str]:
    """The node of each interrupt entry: a bare name, or ``{"node": ..., "approvers": ...}``."""
    return [item if isinstance(item, str) else item["node"] for item in items]


def _retry(value: Any, registry: Registry) -> Retry | None:
    if value is None or not isinstance(value, dict):
        return None if value is None else Retry(attempts=int(value))
    options: dict[str, Any] = {
        k: float(v) for k, v in value.items() if k not in ("attempts", "exceptions")
    }
    if "attempts" in value:
        options["attempts"] = int(value["attempts"])
    if "exceptions" in value:  # not "on", which YAML reads as true
        options["on"] = tuple(resolve("exception", n, registry) for n in value["exceptions"])
    return Retry(**options)
