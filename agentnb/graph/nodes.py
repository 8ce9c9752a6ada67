"""What a graph is made of: nodes (``NodeSpec``), conditional edges (``Branch``), joins.

Records built by :class:`~agentnb.graph.builder.StateGraph` and read by the compiled
workflow and the driver; :func:`function_node` checks a node function once, when it is
added, so the runtime never has to.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentnb.errors import DefinitionError
from agentnb.resilience import CircuitBreaker, Retry

if TYPE_CHECKING:
    from agentnb.graph.builder import StateGraph

__all__ = ["Branch", "Join", "NodeFn", "NodeSpec", "Router", "function_node", "run_subgraph"]

NodeFn = Callable[..., Any]
Router = Callable[[dict[str, Any]], Any]
"""``router(state)`` returns an outcome, a :class:`~agentnb.Send`, or a list of them."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """A node: its function, and how to call it."""

    name: str
    fn: NodeFn
    takes_ctx: bool
    is_async: bool
    description: str | None = None
    timeout: float | None = None
    retry: Retry | None = None
    breaker: CircuitBreaker | None = None
    subgraph: StateGraph | None = None
    """A graph run as this node (its own run, nested under the parent's)."""
    input_keys: tuple[str, ...] | None = None
    """The parent's keys a subgraph starts with (all of them when ``None``)."""
    output_keys: tuple[str, ...] | None = None
    """The subgraph's keys that come back to the parent (every changed one when ``None``)."""

    @property
    def guarded(self) -> bool:
        """True when a timeout, retry policy or breaker wraps the call."""
        return self.timeout is not None or self.retry is not None or self.breaker is not None


@dataclass(frozen=True, slots=True)
class Branch:
    """A conditional edge: ``router(state)`` returns an outcome; ``targets`` maps it to a node."""

    source: str
    router: Router
    targets: Mapping[str, str]

    @property
    def labelled(self) -> bool:
        """True when outcomes differ from node names (the edge is labelled in diagrams)."""
        return any(outcome != node for outcome, node in self.targets.items())


@dataclass(frozen=True, slots=True)
class Join:
    """``add_edge([a, b], c)``: ``target`` runs once, after every one of ``sources`` ran."""

    sources: tuple[str, ...]
    target: str


def function_node(
    name: str,
    fn: NodeFn,
    description: str | None,
    timeout: float | None,
    retry: Retry | int | None,
    breaker: CircuitBreaker | None,
) -> NodeSpec:
    """The node ``fn`` makes, once it is checked to be one (a :class:`DefinitionError`
    naming the node otherwise)."""
    if not callable(fn):
        raise DefinitionError(
            f"node {name!r}: {fn!r} is not callable",
            culprit=name,
            fix="Pass a function fn(state) or fn(state, ctx).",
        )
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise DefinitionError(
            f"node {name!r}: timeout={timeout!r} must be a positive number of seconds",
            culprit=name,
        )
    if breaker is not None and not isinstance(breaker, CircuitBreaker):
        raise DefinitionError(
            f"node {name!r}: breaker={breaker!r} is not a CircuitBreaker", culprit=name
        )
    return NodeSpec(
        name,
        fn,
        _arity(fn, name),
        _is_async(fn),
        description,
        None if timeout is None else float(timeout),
        Retry.coerce(retry),
        breaker,
    )


def _arity(fn: NodeFn, name: str) -> bool:
    """Whether ``fn`` takes ``(state, ctx)`` rather than ``(state)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: assume fn(state)
        return False
    positional = [
        p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())
    if len(required) > 2 or (not positional and not varargs):
        raise DefinitionError(
            f"node {name!r}: {getattr(fn, '__name__', fn)!r} takes {len(required)} required "
            "arguments",
            culprit=name,
            fix="A node is fn(state) or fn(state, ctx) and returns a dict of changes or None.",
        )
    # A second parameter with a default (``lambda state, i=i: ...``) is the caller's own;
    # it receives ctx only when it is required or named for it.
    named_ctx = len(positional) >= 2 and positional[1].name in ("ctx", "context")
    return len(required) >= 2 or named_ctx or varargs


async def run_subgraph(state: dict[str, Any]) -> None:  # the driver runs subgraphs itself
    raise AssertionError("a subgraph node is driven by the runtime, never called")


def _is_async(fn: NodeFn) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - instances with an async __call__
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
