"""Where a conditional edge may lead, from LangGraph's ``path_map`` forms.

``add_conditional_edges(source, path, path_map)`` (LangGraph's spelling) declares the
router's targets as a list of nodes, a dict ``outcome -> node``, or — with no
``path_map`` — the ``Literal[...]`` its return annotation names. agentnb needs the
targets before a run (the drawing is exactly what can run), so a router that declares
nothing is refused when the edge is added.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentnb.errors import DefinitionError

__all__ = ["declared_targets"]


def declared_targets(
    source: str,
    path: Callable[..., Any],
    path_map: Sequence[str] | Mapping[Any, str] | None,
) -> list[str] | dict[str, str]:
    """The targets ``add_conditional_edge`` takes, from a LangGraph ``path_map``.

    Example:
        >>> from typing import Literal
        >>> def route(state) -> Literal["approve", "refund"]: ...
        >>> declared_targets("plan", route, None)
        ['approve', 'refund']
        >>> declared_targets("plan", route, {"big": "approve", "small": "refund"})
        {'big': 'approve', 'small': 'refund'}
    """
    if path_map is None:
        return _from_annotation(source, path)
    if isinstance(path_map, Mapping):
        odd = [outcome for outcome in path_map if not isinstance(outcome, str)]
        if odd:  # outcomes are stored with the run's shape and drawn: they are text
            raise DefinitionError(
                f"the conditional edge from {source!r} maps the outcome {odd[0]!r}, which is "
                "not a string",
                culprit=source,
                fix='Have the router return strings, e.g. {"yes": "approve", "no": "refund"}.',
            )
        return dict(path_map)
    return list(path_map)


def _from_annotation(source: str, path: Callable[..., Any]) -> list[str]:
    fix = (
        f'Declare where it may go: add_conditional_edges({source!r}, router, ["a", "b"]) '
        'or {"outcome": "node"}, or annotate the router\'s return as Literal["a", "b"]'
    )
    try:
        returns = typing.get_type_hints(path).get("return")
    except Exception:  # an annotation that does not resolve declares nothing
        returns = None
    values = _literal_values(returns)
    if not values:
        raise DefinitionError(
            f"the conditional edge from {source!r} declares no targets: no path_map, and "
            "the router's return annotation is not a Literal of node names",
            culprit=source,
            fix=f"{fix}.",
        )
    return values


def _literal_values(annotation: Any) -> list[str]:
    """The strings of ``Literal[...]`` (also inside a union, e.g. ``Literal[...] | None``)."""
    if typing.get_origin(annotation) is typing.Literal:
        return [v for v in typing.get_args(annotation) if isinstance(v, str)]
    found: list[str] = []
    for arg in typing.get_args(annotation):
        found += [v for v in _literal_values(arg) if v not in found]
    return found
