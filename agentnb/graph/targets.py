"""What ``agentnb worker --workflow MODULE:ATTR`` loads: a workflow bound to the worker's store.

``ATTR`` is a :class:`~agentnb.StateGraph` (compiled with the store), a compiled
:class:`~agentnb.Workflow` (rebound to the store, its settings kept), a callable
``build(store) -> Workflow``, or a :class:`~agentnb.Statechart` (a worker fires its
instances' due timers).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

from agentnb.errors import DefinitionError

if TYPE_CHECKING:
    from agentnb.fsm.chart import Statechart
    from agentnb.graph.workflow import Workflow
    from agentnb.store.base import Checkpointer

__all__ = ["load_workflow"]


def load_workflow(target: str, store: Checkpointer) -> Workflow | Statechart:
    """``MODULE:ATTR`` -> a workflow bound to ``store``, or a statechart.

    ``ATTR`` is a :class:`~agentnb.StateGraph` (compiled with ``store``), a compiled
    :class:`~agentnb.Workflow` (rebound to ``store``, its settings kept), a callable
    ``build(store) -> Workflow``, or a :class:`~agentnb.Statechart` (a worker fires its
    instances' due timers). The current directory is importable, as for ``python -m``.

    Raises:
        DefinitionError: the target cannot be imported or is none of those.
    """
    from agentnb.fsm.chart import Statechart
    from agentnb.graph.builder import StateGraph
    from agentnb.graph.workflow import Workflow

    module_name, sep, attr = target.partition(":")
    names = [*module_name.split("."), *attr.split(".")]
    if not sep or not all(n.isidentifier() for n in names):
        raise DefinitionError(
            f"--workflow must look like MODULE:ATTR, not {target!r}",
            culprit=target,
            fix="Name the module and the graph in it, e.g. --workflow flows.refund:graph.",
        )
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise DefinitionError(
            f"cannot import {module_name!r}: {exc}",
            culprit=target,
            fix=f"Run the worker where {module_name} is importable (looked in {cwd}).",
        ) from None
    for name in attr.split("."):
        if not hasattr(obj, name):
            raise DefinitionError(
                f"{module_name!r} has no attribute {attr!r}",
                culprit=target,
                fix="Name a StateGraph, a Workflow or a build(store) function in it.",
            )
        obj = getattr(obj, name)
    if isinstance(obj, Statechart):
        return obj
    if isinstance(obj, StateGraph):
        return obj.compile(store)
    if isinstance(obj, Workflow):
        return _rebound(obj, store)
    if callable(obj):
        built = obj(store)
        if isinstance(built, Workflow):
            return built if built.checkpointer is store else _rebound(built, store)
    raise DefinitionError(
        f"{target!r} is not a StateGraph, a Workflow, a build(store) -> Workflow or a Statechart",
        culprit=target,
        fix="Point --workflow at the graph, e.g. --workflow flows.refund:graph.",
    )


def _rebound(wf: Workflow, store: Checkpointer) -> Workflow:
    from agentnb.graph.workflow import Workflow

    return Workflow(
        wf.graph,
        store,
        max_steps=wf.max_steps,
        lease_seconds=wf.lease_seconds,
        max_concurrency=wf.max_concurrency,
        keep_streams=wf.keep_streams,
        identity=wf._identity,
    )
