"""The statechart document as the interpreter reads it: a tree of :class:`Node` states.

Both ways of writing a chart — the Python records of :mod:`agentnb.fsm.chart` and SCXML
files (:mod:`agentnb.fsm.scxml`) — build this tree; :func:`finish` numbers it in document
order, indexes it by id and resolves every transition's targets.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from agentnb.errors import DefinitionError
from agentnb.fsm.content import Content
from agentnb.fsm.expressions import Expression, ExpressionError

__all__ = ["ROOT", "ChartTransition", "Condition", "Node", "finish"]

ROOT = "#root"
Guard: TypeAlias = Callable[[dict[str, Any], Any], Any] | str | Expression
"""A function returning a bool (or an awaitable of one), or an expression."""


class Condition:
    """A guard: a Python function, or an expression over the datamodel."""

    __slots__ = ("expr", "fn", "text")

    def __init__(self, guard: Guard) -> None:
        self.fn: Callable[[dict[str, Any], Any], Any] | None = None
        self.expr: Expression | None = None
        if isinstance(guard, Expression):
            self.expr = guard
        elif isinstance(guard, str):
            try:
                self.expr = Expression(guard)
            except ExpressionError as exc:
                raise DefinitionError(
                    f"guard {guard!r}: {exc}", culprit=guard, fix="Write a Python expression"
                ) from None
        elif callable(guard):
            self.fn = guard
        else:
            raise DefinitionError(
                f"guard {guard!r} is neither a function nor an expression",
                culprit=repr(guard),
                fix="Pass guard=fn(context, payload) -> bool, or a string expression",
            )
        self.text = self.expr.text if self.expr is not None else _fn_name(self.fn)


@dataclass(eq=False)
class ChartTransition:
    """One transition of the document (``order`` is document order)."""

    source: Node
    events: tuple[str, ...]
    targets: tuple[str, ...]
    cond: Condition | None = None
    internal: bool = False
    content: tuple[Content, ...] = ()
    order: int = 0
    line: int | None = None
    target_nodes: tuple[Node, ...] = ()
    exact: bool = False
    """Match event names exactly (a flat machine's), not as SCXML descriptors."""

    def __repr__(self) -> str:
        event = " ".join(self.events) or "(eventless)"
        return f"<{self.source.id} --{event}--> {' '.join(self.targets) or '(targetless)'}>"

    def matches(self, name: str) -> bool:
        """Whether the event ``name`` matches one of this transition's descriptors."""
        if self.exact:
            return name in self.events
        for descriptor in self.events:
            if descriptor == "*":
                return True
            stem = descriptor[:-2] if descriptor.endswith(".*") else descriptor.rstrip(".")
            if name == stem or name.startswith(stem + "."):
                return True
        return False


@dataclass(eq=False)
class Node:
    """One state of the document tree, as the interpreter sees it."""

    id: str
    kind: str  # "scxml" | "state" | "parallel" | "final" | "history"
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    transitions: list[ChartTransition] = field(default_factory=list)
    initial: ChartTransition | None = None
    onentry: list[tuple[Content, ...]] = field(default_factory=list)
    onexit: list[tuple[Content, ...]] = field(default_factory=list)
    donedata: Any = None
    deep: bool = False
    data: list[tuple[str, Expression | None, Any]] = field(default_factory=list)
    invokes: list[Any] = field(default_factory=list)
    """``Invoke`` records: child sessions started while the state is active."""
    order: int = 0
    depth: int = 0
    line: int | None = None

    def __repr__(self) -> str:
        return f"<Node {self.kind} {self.id!r}>"

    # Cached: the interpreter asks these on every microstep. finish() clears them, and the
    # tree does not change after it.
    @functools.cached_property
    def child_states(self) -> list[Node]:
        """Children that are states (history pseudo-states excluded)."""
        return [c for c in self.children if c.kind != "history"]

    @functools.cached_property
    def is_atomic(self) -> bool:
        return self.kind in ("state", "final") and not self.child_states

    @functools.cached_property
    def is_compound(self) -> bool:
        return self.kind in ("state", "scxml") and bool(self.child_states)

    @functools.cached_property
    def history_children(self) -> list[Node]:
        return [c for c in self.children if c.kind == "history"]

    @functools.cached_property
    def eventless(self) -> list[ChartTransition]:
        """The transitions without an event, in document order."""
        return [t for t in self.transitions if not t.events]

    @functools.cached_property
    def evented(self) -> list[ChartTransition]:
        """The transitions with an event descriptor, in document order."""
        return [t for t in self.transitions if t.events]

    def forget(self) -> None:
        """Drop the cached shape (the tree is being built or renumbered)."""
        names = ("child_states", "is_atomic", "is_compound", "history_children")
        for name in (*names, "eventless", "evented"):
            self.__dict__.pop(name, None)

    def is_descendant_of(self, other: Node) -> bool:
        node = self.parent
        while node is not None:
            if node is other:
                return True
            node = node.parent
        return False


def _fn_name(fn: object) -> str:
    return str(getattr(fn, "__name__", None) or repr(fn))


def finish(root: Node, name: str) -> dict[str, Node]:
    """Number the tree in document order, index it by id and check every reference."""
    nodes: dict[str, Node] = {}
    order = 0
    stack: list[Node] = [root]
    while stack:
        node = stack.pop()
        node.forget()
        node.order = order
        order += 1
        node.depth = 0 if node.parent is None else node.parent.depth + 1
        if node is not root:
            if not node.id or node.id in nodes or node.id == ROOT:
                raise DefinitionError(
                    f"state id {node.id!r} is {'empty' if not node.id else 'used twice'}",
                    culprit=node.id,
                    fix="Give every state a unique, non-empty id",
                )
            nodes[node.id] = node
        stack.extend(reversed(node.children))
    count = 0
    for node in [root, *nodes.values()]:
        for t in node.transitions:
            t.order = count
            count += 1
        for each in [node.initial, *node.transitions]:
            if each is not None:
                each.target_nodes = tuple(_resolve(nodes, name, each, x) for x in each.targets)
        if node.kind == "history" and node.initial is None:
            parent = node.parent
            assert parent is not None
            default = parent.initial.targets if parent.initial else ()
            if not default and parent.child_states:
                default = (parent.child_states[0].id,)
            node.initial = ChartTransition(node, (), default)
            node.initial.target_nodes = tuple(
                _resolve(nodes, name, node.initial, d) for d in default
            )
        if node.kind in ("state", "scxml") and node.child_states and node.initial:
            for target in node.initial.target_nodes:
                if not target.is_descendant_of(node):
                    raise DefinitionError(
                        f"initial state {target.id!r} of {node.id!r} is not inside it",
                        culprit=node.id,
                        fix=f"Name a descendant of {node.id!r}",
                    )
    return nodes


def _resolve(nodes: dict[str, Node], name: str, t: ChartTransition, target: str) -> Node:
    node = nodes.get(target)
    if node is None and "." in target:  # "parent.child" as a path, e.g. "playing.hist"
        parent, _, child = target.rpartition(".")
        if parent in nodes and child in nodes:
            candidate = nodes[child]
            if candidate.parent is nodes[parent]:
                node = candidate
    if node is None:
        raise DefinitionError(
            f"transition {t!r} targets {target!r}, which is not a state of {name!r}",
            culprit=target,
            fix=f"Use one of: {', '.join(list(nodes)[:20])}",
        )
    return node
