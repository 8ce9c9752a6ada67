"""The root every agentnb error derives from, and how a failure is described in events."""

from __future__ import annotations

from typing import Any


class AgentnbError(Exception):
    """Root of every error raised by agentnb.

    Example:
        Catch this one to handle any failure of agentnb's, and only those:

        >>> from agentnb import AgentnbError, MemoryCheckpointer
        >>> try:
        ...     MemoryCheckpointer().get_run("nope")
        ... except AgentnbError as error:
        ...     print(type(error).__name__)
        RunNotFound
    """


def describe(error: BaseException) -> dict[str, Any]:
    """A JSON-ready description of an exception, as stored in ``failed`` events.

    The message is storable text whatever the exception carried: a lone surrogate (from
    bytes decoded with ``errors="surrogateescape"``, say) is written as its escape,
    ``\\udc80``, so the failure it reports can always be committed.
    """
    message = str(error)
    if not message.isascii():
        message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return {"type": type(error).__name__, "message": message}
