"""The root every agentnb error derives from, and how a failure is described in events."""

from __future__ import annotations

from typing import Any


class AgentnbError(Exception):
    """Root of every error raised by agentnb."""


def describe(error: BaseException) -> dict[str, Any]:
    """A JSON-ready description of an exception, as stored in ``failed`` events."""
    return {"type": type(error).__name__, "message": str(error)}
