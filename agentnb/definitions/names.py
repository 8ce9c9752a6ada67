"""The names a definition may use, and the fix for a name that is not known."""

from __future__ import annotations

import re
from collections.abc import Collection

__all__ = ["NAME_FIX", "NAME_MAX_LENGTH", "NAME_PATTERN", "is_valid_name", "suggest"]

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]*$"
"""Names of machines, states, events and registry entries (the schema uses the same text)."""
NAME_MAX_LENGTH = 64

# fullmatch on the pattern without anchors: re's ``$`` also matches before a final newline.
_NAME = re.compile(NAME_PATTERN[1:-1])
NAME_FIX = (
    "Names start with a letter or '_' and contain only letters, digits, '_', '.' and '-' "
    f"; at most {NAME_MAX_LENGTH} characters"
)


def is_valid_name(name: object) -> bool:
    """True if ``name`` is a str usable as a state, event, machine or registry name."""
    return isinstance(name, str) and len(name) <= NAME_MAX_LENGTH and bool(_NAME.fullmatch(name))


def suggest(
    name: str,
    known: Collection[str],
    what: str = "nodes",
    *,
    sentence: bool = True,
    none: str = "none",
) -> str:
    """``"Did you mean 'x'? Known nodes: ..."``: the fix for a name that is not known.

    Args:
        what: what the known names are (``"nodes"``, ``"states"``, ``"names"``).
        sentence: ``False`` starts with a small letter, for a fix shown inside another one.
        none: the listing when nothing is known.
    """
    import difflib  # only when a name is wrong: no import cost for valid definitions

    names = sorted(set(known))
    # difflib is quadratic-ish per call; on a huge definition the listing is hint enough.
    close = difflib.get_close_matches(name, names, n=1) if len(names) <= 100 else []
    listing = ", ".join(repr(n) for n in names[:20]) + (", ..." if len(names) > 20 else "")
    hint = f"{'D' if sentence else 'd'}id you mean {close[0]!r}? " if close else ""
    return f"{hint}Known {what}: {listing or none}"
