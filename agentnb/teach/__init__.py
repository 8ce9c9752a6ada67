"""Exercises that check themselves from what was recorded.

A student does an exercise — runs, approves, rejects, clicks a panel's buttons — and asks::

    from agentnb.teach import check
    check("02.1", run=run)            # or db="runs/approvals.sqlite3", instance=..., answer=...

The checker reads the store — events, checkpoints, decisions, effects, machine histories —
and prints ``✓`` with what happened, or ``✗`` with what happened and a hint that points at
the concept, never at the answer. It grades what happened, not how the code was written,
so any correct solution passes and a ``.sqlite3`` file is a complete submission
(``agentnb check 02.1 --db FILE`` in a terminal).

nbgrader: put ``check(..., strict=True)`` in an autograder test cell; it raises
:class:`~agentnb.errors.ExerciseFailed` (an ``AssertionError``) when the exercise is not done.

Exercises are registered by id (``"NN.k"``, NN the notebook) with :func:`exercise`; the
course's own live in ``agentnb.teach.course``, one module per notebook.
"""

from agentnb.teach.evidence import Evidence
from agentnb.teach.grading import check, grade
from agentnb.teach.registry import Exercise, exercise, exercises, lookup
from agentnb.teach.verdict import Outcome, Result, no, ok

__all__ = [
    "Evidence",
    "Exercise",
    "Outcome",
    "Result",
    "check",
    "exercise",
    "exercises",
    "grade",
    "lookup",
    "no",
    "ok",
]
