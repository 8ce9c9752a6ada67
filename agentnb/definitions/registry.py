"""Where the functions a definition names come from: a registry, never an import.

A document names its node functions, routers, guards and actions; the caller passes a
mapping from those names to the objects. Nothing a file names is ever imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

__all__ = ["Registry", "registered"]

Registry: TypeAlias = Mapping[str, Any]
"""Names a document may use -> functions (node functions, routers, guards, actions,
reducers) and exception types. Each loader checks that an entry fits its role."""


def registered(registry: Registry) -> str:
    """The registry's names for a fix (``'a', 'b'``), or ``none``."""
    return ", ".join(repr(n) for n in sorted(registry)) or "none"
