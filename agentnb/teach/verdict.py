"""What a checker concludes: an :class:`Outcome`, and the :class:`Result` a student sees."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "Result", "no", "ok"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """A checker's verdict: did it pass, what was recorded, and (if not) a concept to revisit.

    ``observed`` says what the store shows ("rejected; only `planner` ran; no refund paid");
    ``hint`` points at the idea to look at again, never at the answer. A failed outcome
    without its own hint gets the exercise's.

    Example:
        >>> from agentnb.teach import Outcome, no, ok
        >>> ok("the run was rejected")
        Outcome(passed=True, observed='the run was rejected', hint=None)
        >>> no("it completed", hint="an interrupt pauses before its node") == Outcome(
        ...     False, "it completed", "an interrupt pauses before its node")
        True
    """

    passed: bool
    observed: str
    hint: str | None = None


def ok(observed: str) -> Outcome:
    """A passing outcome: ``observed`` says what was recorded.

    Example:
        >>> from agentnb.teach import ok
        >>> ok("both branches ran in step 1").passed
        True
    """
    return Outcome(True, observed)


def no(observed: str, hint: str | None = None) -> Outcome:
    """A failing outcome: what was recorded, and optionally a more specific hint.

    Example:
        >>> from agentnb.teach import no
        >>> outcome = no("only one branch ran", hint="edges from one node fan out")
        >>> outcome.passed, outcome.hint
        (False, 'edges from one node fan out')
    """
    return Outcome(False, observed, hint)


@dataclass(frozen=True, slots=True)
class Result:
    """The graded exercise: ``bool(result)`` is whether it passed; ``str`` is the verdict.

    Example:
        >>> from agentnb.teach import Result
        >>> result = Result("01.1", "Reject a big refund", False, "it completed", hint="see step 1")
        >>> bool(result)
        False
        >>> print(result)
        ✗ 01.1 Reject a big refund: it completed
          hint: see step 1
    """

    exercise: str
    title: str
    passed: bool
    observed: str
    hint: str | None = None
    read: str | None = None
    """The database file the evidence was read from (``None``: a store in memory)."""
    warning: str | None = None
    """Said whether it passed or not: the file read is not where the student's records
    are (deleted or replaced under an open store), so the grade may be of the wrong file."""

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        mark = "✓" if self.passed else "✗"
        line = f"{mark} {self.exercise} {self.title}: {self.observed}"
        if self.read and (not self.passed or self.warning):
            line += f"\n  read: {self.read}"
        if self.warning:
            line += f"\n  ⚠ {self.warning}"
        if not self.passed and self.hint:
            line += f"\n  hint: {self.hint}"
        return line

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(str(self))
