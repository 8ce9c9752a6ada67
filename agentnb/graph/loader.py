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
    interrupt_before: [human_approval]
    breakers: {pay: {failures: 3, reset_after: 30}}
    reducers: {total: add}

Functions, routers, reducers and retried exceptions are *names*, resolved only in the
``registry`` the caller passes (exceptions may also be built-in exception names): a file can
never make agentnb import or run anything it names. Every problem is reported at once, as
one :class:`~agentnb.errors.SchemaError` with JSON paths (``$.edges[1].target``) and fixes;
nothing is built unless there are none.
"""

from __future__ import annotations

import builtins
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeAlias

from agentnb.errors import DefinitionError, SchemaError, SchemaProblem
from agentnb.fsm.document import (
    MAX_PROBLEMS,
    MORE_PROBLEMS,
    Document,
    Format,
    Source,
    json_path,
    parse_document,
    read_source,
)
from agentnb.fsm.schema import load_schema, schema_problems
from agentnb.graph.builder import RESERVED, StateGraph
from agentnb.graph.rules import check_graph, suggest
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

Registry: TypeAlias = Mapping[str, Any]
"""Names a document may use -> node functions, routers, reducers and exception types."""
DefinitionKind: TypeAlias = Literal["workflow", "state_machine"]
Path: TypeAlias = tuple[str | int, ...]


@functools.cache
def workflow_schema() -> dict[str, Any]:
    """The workflow JSON Schema (draft 2020-12) shipped with agentnb."""
    return load_schema("agentnb.graph", "workflow.schema.json")


class LoadedGraph(StateGraph):
    """A :class:`StateGraph` read from a file, whose ``max_steps`` ``compile()`` uses.

    ``source`` names the file and ``digest`` (SHA-256 of its bytes) its version.
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
    problems, graph = _examine(document, _placeholders(document.data, label))
    if graph is None:
        raise SchemaError(problems, source=label)
    return graph


def validate_workflow_file(
    path: Source, *, registry: Registry | None = None, format: Format | None = None
) -> list[SchemaProblem]:
    """Every problem in a workflow file (empty when it is valid); never raises for content.

    Without ``registry``, the names of functions, routers, reducers and exceptions are
    checked for form only — the command line cannot know what a program will register.
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
        semantic += _reference_problems(data, registry)
    return problems + [p for p in dict.fromkeys(semantic) if p.path not in broken]


def _sound(broken: Iterable[str], *path: str | int) -> bool:
    """Whether nothing at or under ``path`` has a problem (of the schema's, say)."""
    at = json_path(path)
    return not any(b == at or b.startswith((at + ".", at + "[")) for b in broken)


def _items(data: dict[str, Any], key: str, broken: Iterable[str] = ()) -> list[tuple[int, Any]]:
    """The objects listed under ``key``, with their indexes; none with a problem in ``broken``."""
    value = data.get(key)
    items = enumerate(value if isinstance(value, list) else [])
    return [(i, v) for i, v in items if isinstance(v, dict) and _sound(broken, key, i)]


def _nodes(data: dict[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """``(path of the node's name, its object form)`` for each node with a string name."""
    out: list[tuple[Path, dict[str, Any]]] = []
    raw = data.get("nodes")
    for i, item in enumerate(raw if isinstance(raw, list) else []):
        spec = {"name": item} if isinstance(item, str) else item
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            out.append((("nodes", i) if isinstance(item, str) else ("nodes", i, "name"), spec))
    return out


def _targets(value: Any) -> list[tuple[str | int, str]]:
    """``(key or index, name)`` for each string in a mapping or a list."""
    items = value if isinstance(value, list) else []
    pairs = value.items() if isinstance(value, dict) else enumerate(items)
    return [(key, target) for key, target in pairs if isinstance(target, str)]


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
    for path, spec in _nodes(data):
        breaker = spec.get("breaker")
        if isinstance(breaker, str) and isinstance(breakers, dict) and breaker not in breakers:
            fix = f'Declare it under "breakers". {suggest(breaker, breakers, "breakers")}'
            at = json_path((*path[:2], "breaker"))
            problems.append(SchemaProblem(at, f"breaker {breaker!r} is not declared", fix))
    # Parts with a problem of their own are left out; the schema vouches for the rest.
    before, after = (
        list(enumerate(data.get(key, []) if _sound(broken, key) else []))
        for key in ("interrupt_before", "interrupt_after")
    )
    findings = check_graph(
        [spec["name"] for _, spec in _nodes(data)],
        data["entry"],
        [(i, e["source"], e["target"]) for i, e in _items(data, "edges", broken)],
        [(k, b["source"], b["targets"]) for k, b in _items(data, "conditional_edges", broken)],
        before,
        after,
        complete=not (problems or broken),
    )
    for f in findings:
        # A node given as a bare string is its own name: $.nodes[1], not $.nodes[1].name.
        name = f.path[0] == "nodes" and f.path[2:] == ("name",)
        bare = name and isinstance(data["nodes"][f.path[1]], str)
        problems.append(SchemaProblem(json_path(f.path[:2] if bare else f.path), f.message, f.fix))
    return problems


# -- names -------------------------------------------------------------------------------


def _references(data: Any) -> list[tuple[Path, str, str]]:
    """``(path, role, name)`` for every name the document asks the registry for."""
    if not isinstance(data, dict):
        return []
    refs: list[tuple[Path, str, Any]] = []
    for path, spec in _nodes(data):
        if spec["name"] in RESERVED:
            continue  # not a node: reported as such
        fn_path = (*path[:2], "fn") if "fn" in spec else path
        refs.append((fn_path, "function", spec.get("fn", spec["name"])))
        retried = spec["retry"].get("exceptions") if isinstance(spec.get("retry"), dict) else None
        refs += [
            ((*path[:2], "retry", "exceptions", j), "exception", n) for j, n in _targets(retried)
        ]
    for k, branch in _items(data, "conditional_edges"):
        refs.append((("conditional_edges", k, "router"), "router", branch.get("router")))
    reducers = data.get("reducers")
    refs += [(("reducers", key), "reducer", n) for key, n in _targets(reducers)]
    return [(path, role, name) for path, role, name in refs if isinstance(name, str)]


def _exception_type(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, BaseException)


def _resolve(role: str, name: str, registry: Registry) -> Any:
    if role == "exception" and name not in registry:
        found = getattr(builtins, name, None)  # a built-in, never an import
        return found if _exception_type(found) else None
    return registry.get(name)


_WANTED: dict[str, tuple[Callable[[Any], bool], str]] = {
    "function": (callable, "a function fn(state) or fn(state, ctx)"),
    "router": (callable, "a function router(state) -> outcome"),
    "reducer": (callable, "a function reducer(current, new) -> merged value"),
    "exception": (_exception_type, "an exception class"),
}


def _reference_problems(data: Any, registry: Registry) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    for path, role, name in _references(data):
        value = _resolve(role, name, registry)
        fits, wanted = _WANTED[role]
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


def _placeholders(data: Any, source: str) -> dict[str, Any]:
    registry: dict[str, Any] = {}
    for _, role, name in _references(data):
        if role == "exception":
            registry[name] = _resolve(role, name, {}) or type(name, (Exception,), {})
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
    for path, spec in _nodes(data):
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
    graph.add_interrupt_before(*data.get("interrupt_before", []))
    graph.add_interrupt_after(*data.get("interrupt_after", []))
    if not problems:
        # The same rules ran above, so a refusal here means something was left out of them;
        # still refuse the file the documented way.
        attempt((), graph.compile)
    return (None if problems else graph), problems


def _retry(value: Any, registry: Registry) -> Retry | None:
    if value is None or not isinstance(value, dict):
        return None if value is None else Retry(attempts=int(value))
    options: dict[str, Any] = {
        k: float(v) for k, v in value.items() if k not in ("attempts", "exceptions")
    }
    if "attempts" in value:
        options["attempts"] = int(value["attempts"])
    if "exceptions" in value:  # not "on", which YAML reads as true
        options["on"] = tuple(_resolve("exception", n, registry) for n in value["exceptions"])
    return Retry(**options)
