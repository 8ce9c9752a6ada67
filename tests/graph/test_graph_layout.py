"""The driver's and the run handle's parts import each other in one direction only."""

from __future__ import annotations

import ast
from pathlib import Path

import agentnb.graph

PACKAGE = Path(agentnb.graph.__file__).parent

# Lowest first: a part may import the ones before it, never one after it (not even
# lazily or for typing, except where TYPING_UP allows).
DRIVER = ["commits", "calls", "fanout", "driver"]
RUN = ["context", "handle", "approvals", "run"]
TYPING_UP = {("handle", "driver")}  # the handle names the Position a driver hands back


def graph_imports(name: str) -> set[str]:
    """The ``agentnb.graph`` modules ``name`` imports anywhere in its text."""
    tree = ast.parse((PACKAGE / f"{name}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentnb.graph."):
            found.add(node.module.removeprefix("agentnb.graph."))  # type: ignore[union-attr]
    return found


def test_the_drivers_parts_import_downward_only() -> None:
    problems = []
    for order in (DRIVER, RUN):
        for i, part in enumerate(order):
            above = set(order[i + 1 :])
            problems += [
                f"{part} imports {up}"
                for up in graph_imports(part) & above
                if (part, up) not in TYPING_UP
            ]
    assert problems == []


def test_the_driver_never_imports_the_run_handle() -> None:
    problems = [
        f"{part} imports {other}"
        for part in DRIVER
        for other in graph_imports(part) & {"run", "approvals", "handle"}
    ]
    assert problems == []
