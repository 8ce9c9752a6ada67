"""Workflow graphs: build with ``StateGraph``, run with ``Workflow`` and ``Run``."""

from typing import TYPE_CHECKING

from agentnb.graph.builder import END, START, StateGraph
from agentnb.graph.run import NodeContext, Run, StepResult
from agentnb.graph.workflow import Workflow

if TYPE_CHECKING:
    from agentnb.graph.loader import LoadedGraph, load_workflow, validate_workflow_file

__all__ = [
    "END",
    "START",
    "LoadedGraph",
    "NodeContext",
    "Run",
    "StateGraph",
    "StepResult",
    "Workflow",
    "load_workflow",
    "validate_workflow_file",
]


_LAZY = {
    "LoadedGraph": "agentnb.graph.loader",
    "load_workflow": "agentnb.graph.loader",
    "validate_workflow_file": "agentnb.graph.loader",
}


def __getattr__(name: str) -> object:
    """The file loader is imported when first used: it needs the JSON/YAML reading
    machinery, which a graph built in code never does."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentnb.graph' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
