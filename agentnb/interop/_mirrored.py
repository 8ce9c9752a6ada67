"""The stand-ins a mirror graph is built from: its nodes and routers belong to another
framework (LangGraph, Burr), so agentnb can draw and record them but never run them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentnb.errors import AgentnbError


def mirrored_node(name: str, kind: str, owner: str, handle: str) -> Callable[[Any], None]:
    """A node function that refuses to run: ``kind`` (node, action) ``name`` belongs to
    ``owner`` (a LangGraph graph, a Burr application), driven through ``handle``."""

    def mirrored(state: Any) -> None:
        raise AgentnbError(
            f"{kind} {name!r} belongs to {owner}: agentnb only mirrors it. "
            f"Drive it through its {handle} (run.step(), run.run(), the panel)."
        )

    return mirrored


def never_routed(where: str) -> Callable[[Any], str]:
    """A router that refuses to run, saying ``where`` its decisions are made."""

    def routed(state: Any) -> str:
        raise AgentnbError(f"{where}, never in agentnb")

    return routed
