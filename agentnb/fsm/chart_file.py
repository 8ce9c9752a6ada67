"""Statecharts from JSON/YAML (:func:`load_statechart`) and XState (:func:`load_xstate`).

Both read the same nested shape — XState's — and report every problem at once, as one
:class:`~agentnb.errors.SchemaError` whose problems carry JSON paths and fixes::

    kind: statechart            # agentnb files; delays in seconds
    name: player
    initial: stopped
    context: {volume: 3}
    states:
      stopped: {on: {play: playing}}
      playing:
        initial: normal
        entry: [log_start]                        # registry names
        states: {normal: {}, fast: {}, hist: {type: history, history: deep}}
        on:
          stop: stopped
          pause: {target: paused, guard: is_ready, cond: "volume > 0", actions: [mute]}
        after: {"30": stopped}
        always: [{target: stopped, cond: "volume > 10"}]
      paused: {on: {play: playing.hist}}

``guard`` and ``actions``/``entry``/``exit`` are *names* looked up in the ``registry`` the
caller passes; ``cond`` is an expression for the safe evaluator. Nothing a file names is
ever imported. XState configs use ``id`` for the name, milliseconds in ``after``, and
targets written ``sibling``, ``.child`` or ``#id``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from agentnb._json import json_path
from agentnb.definitions.document import Format, Source, parse_document, read_source
from agentnb.definitions.findings import under
from agentnb.definitions.registry import Registry, registered
from agentnb.definitions.schema import load_schema, schema_problems
from agentnb.errors import DefinitionError, SchemaError, SchemaProblem
from agentnb.fsm.chart import Final, History, Parallel, State, Statechart
from agentnb.fsm.expressions import Expression, ExpressionError

__all__ = ["load_statechart", "load_xstate"]

_STATE_KEYS = {
    "type",
    "initial",
    "states",
    "on",
    "after",
    "always",
    "entry",
    "exit",
    "history",
    "target",
    "output",
    "description",
    "id",
}
_TRANSITION_KEYS = {"target", "guard", "cond", "actions", "internal", "reenter", "description"}


@functools.cache
def statechart_schema() -> dict[str, Any]:
    """The JSON Schema of agentnb statechart files (``kind: statechart``)."""
    return load_schema("agentnb.fsm", "statechart.schema.json")


def load_statechart(
    source: Source, *, registry: Registry | None = None, format: Format | None = None
) -> Statechart:
    """Load a statechart from a JSON/YAML file, text or bytes (``kind: statechart``).

    Raises:
        SchemaError: with every problem found; nothing is half-loaded.
        MissingDependency: ``jsonschema`` (or ``pyyaml`` for YAML) is not installed.

    Example:
        >>> from agentnb import load_statechart
        >>> chart = load_statechart('''
        ... kind: statechart
        ... name: door
        ... initial: shut
        ... states:
        ...   shut: {"on": {open: ajar}}      # "on" quoted: bare on is YAML's True
        ...   ajar: {"on": {close: shut}}
        ... ''')
        >>> chart.start().send("open").target
        'ajar'
    """
    content, label, fmt = read_source(source, format)
    document = parse_document(content, source=label, format=fmt)
    problems = list(document.problems)
    found, _ = schema_problems(document.data, statechart_schema())
    problems += [p for p in found if p not in problems]
    data = document.data
    if not isinstance(data, dict):
        raise SchemaError(problems or [SchemaProblem("$", "not an object")], source=label)
    converter = _Converter(registry or {}, label, ms=False)
    try:
        chart = converter.chart(str(data.get("name", "statechart")), data)
    except SchemaError as error:
        # The rules the schema cannot express, except where the schema already complained.
        broken = {p.path for p in problems}
        problems += [p for p in error.problems if not any(under(p.path, b) for b in broken)]
        raise SchemaError(list(dict.fromkeys(problems)), source=label) from None
    if problems:
        raise SchemaError(problems, source=label)
    return chart


def load_xstate(config: Mapping[str, Any] | str, *, registry: Registry | None = None) -> Statechart:
    """A statechart from an XState machine config (a dict, JSON text, or a JSON file path).

    Supported: ``id``, ``initial``, ``context``, ``states``, ``type`` (``parallel``,
    ``final``, ``history`` with ``history: shallow|deep``), ``on``, ``after`` (milliseconds),
    ``always``, ``entry``/``exit``, guards (``guard``/``cond`` names) and actions by name
    from ``registry``. Anything else is a problem, reported with its path.

    Raises:
        SchemaError: every problem at once.

    Example:
        >>> from agentnb import load_xstate
        >>> chart = load_xstate({
        ...     "id": "door",
        ...     "initial": "shut",
        ...     "states": {"shut": {"on": {"OPEN": "ajar"}}, "ajar": {"on": {"CLOSE": "shut"}}},
        ... })
        >>> chart.start().send("OPEN").target
        'ajar'
    """
    label = "<xstate>"
    if isinstance(config, str):
        content, label, _ = read_source(config, "json")
        config = parse_document(content, source=label, format="json").data
    if not isinstance(config, Mapping):
        raise SchemaError([SchemaProblem("$", "an XState config is a JSON object")], source=label)
    name = config.get("id", "machine")
    return _Converter(registry or {}, label, ms=True).chart(str(name), config)


class _Converter:
    def __init__(self, registry: Registry, source: str, *, ms: bool) -> None:
        self.registry = registry
        self.source = source
        self.ms = ms
        self.problems: list[SchemaProblem] = []
        self.parents: dict[str, str | None] = {}
        self.targets: list[tuple[list[str | int], str, str]] = []  # (path, owner, target)

    def problem(self, path: list[str | int], message: str, fix: str = "") -> None:
        self.problems.append(SchemaProblem(json_path(path), message, fix))

    def chart(self, name: str, data: Mapping[str, Any]) -> Statechart:
        allowed = {
            "id",
            "kind",
            "name",
            "initial",
            "context",
            "states",
            "description",
            "$schema",
            "predictableActionArguments",
            "version",
        }
        for key in data:
            if key not in allowed:
                self.problem(
                    [key], f"unknown key {key!r}", f"Use one of: {', '.join(sorted(allowed))}"
                )
        context = data.get("context", {})
        if not isinstance(context, Mapping):
            self.problem(["context"], "context must be an object")
            context = {}
        states = self.children(["states"], data.get("states"), None)
        initial = data.get("initial")
        if initial is not None:
            self.check_child(["initial"], str(initial), None)
        for path, owner, target in self.targets:
            self.resolve(path, owner, target)
        if self.problems:
            raise SchemaError(list(dict.fromkeys(self.problems)), source=self.source)
        try:
            return Statechart(
                name, states, initial=self.plain(initial, None), datamodel=dict(context)
            )
        except DefinitionError as error:  # a rule the checks above missed: still refuse cleanly
            raise SchemaError(
                [SchemaProblem("$", error.problem, error.fix)], source=self.source
            ) from None

    def children(self, path: list[str | int], states: Any, parent: str | None) -> list[Any]:
        if states is None:
            return []
        if not isinstance(states, Mapping) or not states:
            self.problem(path, "states must be an object of state names", 'Write {"idle": {}}')
            return []
        built = []
        for key, body in states.items():
            if key in self.parents:
                self.problem(
                    [*path, key],
                    f"state name {key!r} is used twice",
                    "agentnb needs every state name to be unique in the chart",
                )
                continue
            self.parents[key] = parent
            built.append(self.state([*path, key], key, body if body is not None else {}))
        return built

    def state(self, path: list[str | int], key: str, body: Any) -> Any:
        if not isinstance(body, Mapping):
            self.problem(path, "a state is an object", "Write {} for a plain state")
            return State(key)
        for k in body:
            if k not in _STATE_KEYS:
                self.problem(
                    [*path, k],
                    f"unknown state key {k!r}",
                    f"Use one of: {', '.join(sorted(_STATE_KEYS))}",
                )
        kind = body.get("type", "compound" if body.get("states") else "atomic")
        entry = self.actions([*path, "entry"], body.get("entry"))
        exit_ = self.actions([*path, "exit"], body.get("exit"))
        if kind == "history":
            depth = body.get("history", "shallow")
            if depth not in ("shallow", "deep"):
                self.problem([*path, "history"], f"history {depth!r} is not shallow or deep")
            default = body.get("target")
            if default is not None:
                self.targets.append(([*path, "target"], key, str(default)))
            return History(key, deep=depth == "deep", default=self.plain(default, key))
        if kind == "final":
            return Final(key, donedata=body.get("output"), on_enter=entry, on_exit=exit_)
        if kind not in ("atomic", "compound", "parallel"):
            self.problem(
                [*path, "type"],
                f"type {kind!r} is not supported",
                "Use parallel, final or history (or leave it out)",
            )
        children = self.children([*path, "states"], body.get("states"), key)
        on = self.on([*path, "on"], key, body.get("on", {}))
        always = self.transitions([*path, "always"], key, body.get("always", []))
        after: dict[float, Any] = {}
        raw_after = body.get("after", {})
        if not isinstance(raw_after, Mapping):
            self.problem([*path, "after"], "after must map delays to targets", 'Write {"5": "off"}')
            raw_after = {}
        for delay, spec in raw_after.items():
            try:
                seconds = float(delay) / (1000 if self.ms else 1)
            except ValueError:
                self.problem(
                    [*path, "after", delay],
                    f"delay {delay!r} is not a number",
                    "Write the delay in " + ("milliseconds" if self.ms else "seconds"),
                )
                continue
            found = self.transitions([*path, "after", delay], key, spec)
            if found:
                after[seconds] = found[0]
        if kind == "parallel":
            return Parallel(
                key,
                states=children,
                on=on,
                always=always,
                after=after,
                on_enter=entry,
                on_exit=exit_,
            )
        initial = body.get("initial")
        if initial is not None:
            self.check_child([*path, "initial"], str(initial), key)
        return State(
            key,
            states=children,
            initial=self.plain(initial, key),
            on=on,
            always=always,
            after=after,
            on_enter=entry,
            on_exit=exit_,
        )

    def on(self, path: list[str | int], owner: str, on: Any) -> dict[str, list[Any]]:
        if not isinstance(on, Mapping):
            self.problem(
                path, "on must map event names to transitions", 'Write {"play": "playing"}'
            )
            return {}
        return {event: self.transitions([*path, event], owner, spec) for event, spec in on.items()}

    def transitions(self, path: list[str | int], owner: str, spec: Any) -> list[Any]:
        items = spec if isinstance(spec, list) else [spec]
        found = []
        for i, item in enumerate(items):
            where = [*path, i] if isinstance(spec, list) else path
            plain = isinstance(item, str) or item is None
            if plain:
                item = {"target": item}
            if not isinstance(item, Mapping):
                self.problem(
                    where,
                    "a transition is a target name or an object",
                    'Write "target" or {"target": ..., "guard": ...}',
                )
                continue
            for k in item:
                if k not in _TRANSITION_KEYS:
                    self.problem(
                        [*where, k],
                        f"unknown transition key {k!r}",
                        f"Use one of: {', '.join(sorted(_TRANSITION_KEYS))}",
                    )
            targets = item.get("target")
            targets = [] if targets is None else targets if isinstance(targets, list) else [targets]
            for n, t in enumerate(targets):
                self.targets.append(
                    (
                        (where if plain else [*where, "target"])
                        + ([n] if len(targets) > 1 else []),
                        owner,
                        str(t),
                    )
                )
            guard = self.guard(where, item)
            found.append(
                {
                    "target": [self.plain(t, owner) for t in targets],
                    "guard": guard,
                    "action": self.actions([*where, "actions"], item.get("actions")),
                    "internal": bool(item.get("internal", item.get("reenter") is False)),
                }
            )
        return found

    def guard(self, path: list[str | int], item: Mapping[str, Any]) -> Any:
        cond, name = item.get("cond"), item.get("guard")
        if self.ms and isinstance(cond, str) and cond in self.registry:
            name, cond = cond, None  # XState v4 spelled named guards "cond"
        if isinstance(name, Mapping):
            name = name.get("type")
        if name is not None:
            fn = self.registry.get(str(name))
            if not callable(fn):
                known = registered(self.registry)
                self.problem(
                    [*path, "guard"],
                    f"unknown guard {name!r}: it is not in the registry",
                    f"Pass registry={{{name!r}: fn}} (registered: {known}), or write "
                    "an expression in 'cond'",
                )
                return None
            return fn
        if cond is not None:
            try:
                return Expression(str(cond))
            except ExpressionError as exc:
                self.problem(
                    [*path, "cond"], str(exc), "Write a Python expression over the context"
                )
        return None

    def actions(self, path: list[str | int], names: Any) -> list[Any]:
        if names is None:
            return []
        items = names if isinstance(names, list) else [names]
        found = []
        for i, name in enumerate(items):
            if isinstance(name, Mapping):
                name = name.get("type")
            fn = self.registry.get(name) if isinstance(name, str) else None
            if not callable(fn):
                where = [*path, i] if isinstance(names, list) else path
                known = registered(self.registry)
                self.problem(
                    where,
                    f"unknown action {name!r}: it is not in the registry",
                    f"Pass registry={{{name!r}: fn}} (registered: {known})",
                )
                continue
            found.append(fn)
        return found

    def check_child(self, path: list[str | int], name: str, parent: str | None) -> None:
        child = self.plain(name, parent)
        if self.parents.get(child, "#missing") != parent:
            siblings = sorted(k for k, p in self.parents.items() if p == parent)
            self.problem(
                path,
                f"initial {name!r} is not a child state here",
                f"Use one of: {', '.join(siblings) or '(no children)'}",
            )

    def plain(self, target: Any, owner: str | None) -> Any:
        """An XState target (``sibling``, ``.child``, ``#id``) as a state name."""
        if not isinstance(target, str):
            return target
        name = target.lstrip("#.") if target.startswith(("#", ".")) else target
        if "." in name and name not in self.parents:
            last = name.rpartition(".")[2]
            if last in self.parents:
                return last if self.parents[last] in name.split(".") else name
        return name

    def resolve(self, path: list[str | int], owner: str, target: str) -> None:
        name = self.plain(target, owner)
        if name not in self.parents:
            close = [k for k in self.parents if k.lower() == str(name).lower()]
            hint = f"Did you mean {close[0]!r}? " if close else ""
            self.problem(
                path,
                f"target {target!r} is not a state of this chart",
                hint + f"Use one of: {', '.join(sorted(self.parents)[:20])}",
            )
