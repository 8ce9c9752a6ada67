"""One registry of exercises: id → title, hint and checker.

The course's own exercises live in :mod:`agentnb.teach.course` (a module per notebook) and
are loaded the first time an exercise is looked up. A notebook that adds exercises puts a
module there, or registers them itself with :func:`exercise`::

    from agentnb.teach import exercise, ok, no

    @exercise("06.1", "Two branches in one superstep", hint="Edges from one node fan out ...")
    def _(evidence):
        ...
        return ok("both branches ran in step 1")
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentnb.errors import DefinitionError, UnknownExercise

if TYPE_CHECKING:
    from agentnb.teach.evidence import Evidence
    from agentnb.teach.verdict import Outcome

__all__ = ["Checker", "Exercise", "exercise", "exercises", "lookup"]

Checker = Callable[["Evidence"], "Outcome"]
"""``checker(evidence) -> Outcome``: reads what was recorded, never the student's code."""


@dataclass(frozen=True, slots=True)
class Exercise:
    """One self-checked exercise: ``id`` such as ``"02.1"`` (notebook.number).

    Example:
        >>> from agentnb.teach import lookup
        >>> exercise = lookup("01.1")
        >>> exercise.id, exercise.title, exercise.notebook
        ('01.1', 'Reject a big refund', '01-quickstart')
    """

    id: str
    title: str
    hint: str
    checker: Checker
    notebook: str = ""


_REGISTRY: dict[str, Exercise] = {}
_loaded = False


def exercise(
    exercise_id: str, title: str, *, hint: str, notebook: str = ""
) -> Callable[[Checker], Checker]:
    """Register the decorated function as the checker of ``exercise_id``.

    Raises:
        DefinitionError: another checker already has this id.

    Example:
        >>> from agentnb import MemoryCheckpointer, StateGraph
        >>> from agentnb.teach import exercise, grade, no, ok
        >>> @exercise("demo.1", "Run something", hint="start a run and let it finish")
        ... def _(evidence):
        ...     finished = [run for run in evidence.runs() if str(run.status) == "completed"]
        ...     if not finished:
        ...         return no("no run completed")
        ...     return ok(f"{len(finished)} run(s) completed")
        >>> store = MemoryCheckpointer()
        >>> print(grade("demo.1", store=store))
        ✗ demo.1 Run something: no run completed
          hint: start a run and let it finish
        >>> graph = StateGraph("g").add_node("a", lambda state: {}).set_entry_point("a")
        >>> _ = graph.compile(store).invoke({})
        >>> print(grade("demo.1", store=store))
        ✓ demo.1 Run something: 1 run(s) completed
    """

    def register(checker: Checker) -> Checker:
        if exercise_id in _REGISTRY and _REGISTRY[exercise_id].checker is not checker:
            raise DefinitionError(
                f"exercise {exercise_id!r} is registered twice",
                culprit=exercise_id,
                fix="Give the new exercise an id of its own",
            )
        _REGISTRY[exercise_id] = Exercise(exercise_id, title, hint, checker, notebook)
        return checker

    return register


def _load_course() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from agentnb.teach import course

    for info in sorted(pkgutil.iter_modules(course.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"{course.__name__}.{info.name}")


def exercises() -> list[Exercise]:
    """Every registered exercise, in id order.

    Example:
        >>> from agentnb.teach import exercises
        >>> [exercise.id for exercise in exercises()][:3]
        ['01.1', '01.2', '01.3']
    """
    _load_course()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def lookup(exercise_id: str) -> Exercise:
    """The exercise registered as ``exercise_id``.

    Raises:
        UnknownExercise: no such id (the message suggests the closest ones).

    Example:
        >>> from agentnb.teach import lookup
        >>> lookup("01.1").title
        'Reject a big refund'
    """
    _load_course()
    found = _REGISTRY.get(str(exercise_id))
    if found is None:
        close = difflib.get_close_matches(str(exercise_id), list(_REGISTRY), n=3, cutoff=0.5)
        raise UnknownExercise(str(exercise_id), close, sorted(_REGISTRY))
    return found
