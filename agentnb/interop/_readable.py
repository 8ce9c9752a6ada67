"""State a person can read, whatever runtime it came from (LangGraph, Burr): JSON only."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping
from typing import Any

__all__ = ["readable"]


def readable(value: Any) -> Any:
    """``value`` as JSON a person can read: LangChain messages as ``{"type", "content"}``
    (with ``name``, ``tool_calls``, ``id`` when set), pydantic models and dataclasses as
    their fields, anything else that is not JSON as its ``repr``.

    Example:
        >>> readable({"n": 1, "when": object})["n"]
        1
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): readable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [readable(v) for v in value]
    message_type = getattr(value, "type", None)
    if isinstance(message_type, str) and hasattr(value, "content"):  # a LangChain message
        shown: dict[str, Any] = {"type": message_type, "content": readable(value.content)}
        for key in ("name", "tool_calls", "tool_call_id", "id"):
            extra = getattr(value, key, None)
            if extra:
                shown[key] = readable(extra)
        return shown
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        with contextlib.suppress(Exception):
            return readable(dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return readable(dataclasses.asdict(value))
    return repr(value)
