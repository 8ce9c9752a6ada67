"""Workflow graphs: build with ``StateGraph``, run with ``Workflow`` and ``Run``."""

from agentnb.graph.builder import END, START, StateGraph
from agentnb.graph.run import NodeContext, Run, StepResult
from agentnb.graph.workflow import Workflow

__all__ = ["END", "START", "NodeContext", "Run", "StateGraph", "StepResult", "Workflow"]
