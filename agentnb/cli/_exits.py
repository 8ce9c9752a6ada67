"""What a command's exit code says, and the error that means "you asked it wrongly"."""

from __future__ import annotations

__all__ = ["OK", "REFUSED", "USAGE", "UsageError"]

OK, REFUSED, USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or a missing file: printed as one line, exit code :data:`USAGE`."""
