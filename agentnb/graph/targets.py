"""``MODULE:ATTR`` targets: the one loader behind ``agentnb worker --workflow``, ``agentnb
approve --workflow`` and ``agentnb draw``.

:func:`import_target` imports the object a target names; :func:`bind_workflow` makes of it
a workflow bound to a store. ``ATTR`` is then a :class:`~agentnb.StateGraph` (compiled
with the store), a compiled :class:`~agentnb.Workflow` (rebound to the store, its settings
kept), a callable ``build(store) -> Workflow``, or a :class:`~agentnb.Statechart` (a worker
fires its instances' due timers).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentnb.errors import DefinitionError

if TYPE_CHECKING:
    from agentnb.fsm.chart import Statechart
    from agentnb.graph.workflow import Workflow
    from agentnb.store.base import Checkpointer

__all__ = ["bind_workflow", "import_target"]


def import_target(target: str, wanted: Callable[[object], bool] | None = None) -> object:
    """The object ``MODULE:ATTR`` names (``ATTR`` may be dotted), imported with the current
    directory importable, as for ``python -m``; ``sys.path`` is left as it was.

    ``wanted`` says which of the module's names to offer when ``ATTR`` is missing.

    Raises:
        DefinitionError: the target is malformed, its module cannot be imported (or its
            import raised), or it has no such attribute; one line says which.
    """
    module_name, sep, attr = target.partition(":")
    names = [*module_name.split("."), *attr.split(".")]
    if not sep or not all(n.isidentifier() for n in names):
        raise DefinitionError(
            f"target must look like MODULE:ATTR, not {target!r}",
            culprit=target,
            fix="Name the module and the object in it, e.g. flows.refund:graph",
        )
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name + ".").startswith(exc.name + "."):
            raise DefinitionError(
                f"no module named {module_name!r} (looked in {cwd})",
                culprit=target,
                fix=f"Run the command where {module_name} is importable",
            ) from None
        raise _failed(target, module_name, exc) from None
    except (Exception, SystemExit) as exc:
        raise _failed(target, module_name, exc) from None
    finally:
        if added:
            sys.path.remove(cwd)
    obj: object = module
    for i, name in enumerate(attr.split(".")):
        if not hasattr(obj, name):
            where = ".".join([module_name, *attr.split(".")[:i]])
            found = sorted(n for n, v in vars(module).items() if wanted is not None and wanted(v))
            has = f" (it has: {', '.join(found)})" if found else ""
            raise DefinitionError(
                f"{where!r} has no attribute {name!r}{has}",
                culprit=target,
                fix="Name an object the module defines",
            )
        obj = getattr(obj, name)
    return obj


def _failed(target: str, module_name: str, exc: BaseException) -> DefinitionError:
    return DefinitionError(
        f"importing {module_name!r} failed: {type(exc).__name__}: {exc}",
        culprit=target,
        fix="Fix the error the module raised on import",
    )


def bind_workflow(target: str, store: Checkpointer) -> Workflow | Statechart:
    """``MODULE:ATTR`` -> a workflow bound to ``store``, or a statechart.

    ``ATTR`` is a :class:`~agentnb.StateGraph` (compiled with ``store``), a compiled
    :class:`~agentnb.Workflow` (rebound to ``store``, its settings kept), a callable
    ``build(store) -> Workflow``, or a :class:`~agentnb.Statechart` (a worker fires its
    instances' due timers).

    Raises:
        DefinitionError: the target cannot be imported or is none of those.
    """
    from agentnb.fsm.chart import Statechart
    from agentnb.graph.builder import StateGraph
    from agentnb.graph.workflow import Workflow

    def runnable(obj: object) -> bool:
        return isinstance(obj, StateGraph | Workflow | Statechart)

    obj = import_target(target, runnable)
    if isinstance(obj, Statechart):
        return obj
    if isinstance(obj, StateGraph):
        return obj.compile(store)
    if isinstance(obj, Workflow):
        return obj.bound_to(store)
    if callable(obj):
        built = obj(store)
        if isinstance(built, Workflow):
            return built.bound_to(store)
    raise DefinitionError(
        f"{target!r} is not a StateGraph, a Workflow, a build(store) -> Workflow or a Statechart",
        culprit=target,
        fix="Point the target at the graph, e.g. flows.refund:graph",
    )
