"""Errors of :mod:`agentnb.teach`: an unknown exercise, an exercise not done."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.errors._root import AgentnbError


class UnknownExercise(AgentnbError):
    """No exercise is registered under this id in :mod:`agentnb.teach`.

    Example:
        >>> from agentnb import UnknownExercise
        >>> from agentnb.teach import lookup
        >>> try:
        ...     lookup("99.9")
        ... except UnknownExercise as error:
        ...     print(error.exercise_id)
        99.9
    """

    def __init__(self, exercise_id: str, close: Sequence[str], known: Sequence[str]) -> None:
        self.exercise_id = exercise_id
        self.close = tuple(close)
        self.known = tuple(known)
        suggestion = (
            f"Did you mean {', '.join(repr(c) for c in self.close)}?"
            if self.close
            else f"Known ones: {', '.join(self.known) or 'none'}."
        )
        super().__init__(
            f"there is no exercise {exercise_id!r}. {suggestion} "
            "`agentnb check --list` lists them all."
        )


class ExerciseFailed(AgentnbError, AssertionError):
    """An exercise checked with ``strict=True`` is not done yet (an autograder's failure).

    Attributes:
        result: the :class:`agentnb.teach.Result`: what was recorded, and the hint.

    Example:
        >>> from agentnb import ExerciseFailed
        >>> issubclass(ExerciseFailed, AssertionError)  # a failed check fails a test, too
        True
    """

    def __init__(self, result: Any) -> None:
        self.result = result
        super().__init__(f"{result}")
