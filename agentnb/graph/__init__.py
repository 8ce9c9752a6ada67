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


_LAZY = {"LoadedGraph", "load_workflow", "validate_workflow_file"}


def __getattr__(name: str) -> object:
    # The file loader needs the JSON/YAML reading machinery: load it only when asked.
    if name in _LAZY:
        from agentnb.graph import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'agentnb.graph' has no attribute {name!r}")
