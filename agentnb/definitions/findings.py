"""What a definition's rules report: one :class:`Finding` per broken rule, at its path.

A builder in code raises the first finding as a :class:`~agentnb.errors.DefinitionError`;
a loader turns every finding into a :class:`~agentnb.errors.SchemaProblem` with
:func:`problem`. Paths are tuples of keys and indexes into the file form
(``("transitions", 3, "target")``); for a definition built in code the indexes are
declaration order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias

from agentnb._json import json_path
from agentnb.errors import SchemaProblem

__all__ = ["Finding", "Path", "problem", "sound", "under"]

Path: TypeAlias = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    """One broken rule: where (``path``), what (``message``), who (``culprit``), and the fix.

    ``fix`` is a phrase without a final full stop: a :class:`SchemaProblem` shows it in
    parentheses, a :class:`DefinitionError` as a sentence.
    """

    path: Path
    message: str
    fix: str
    culprit: str


def problem(finding: Finding) -> SchemaProblem:
    """The finding as a loader reports it: at its JSON path."""
    return SchemaProblem(json_path(finding.path), finding.message, finding.fix)


def under(path: str, prefix: str) -> bool:
    """Whether the JSON path ``path`` is ``prefix`` or inside it."""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


def sound(broken: Iterable[str], *path: str | int) -> bool:
    """Whether nothing at or under ``path`` has a problem (of the schema's, say)."""
    at = json_path(path)
    return not any(under(b, at) for b in broken)
