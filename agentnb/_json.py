"""JSON encoding for everything agentnb stores: strict, compact, with the bad key path.

Standard library only; shared by the state, the checkpointers and the state machines.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from agentnb.errors import InvalidState

__all__ = ["check", "dumps", "json_path", "loads", "quote"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_decoder = json.JSONDecoder()
_scan: Any = getattr(_decoder, "scan_once")  # noqa: B009 (not in the stubs)
# The C encoder JSONEncoder.encode builds on every call, built once: several encodings
# per step, and building it costs more than encoding a small delta. Without circular
# markers it keeps no state between calls (threads may share it); a cycle ends in a
# RecursionError, which _find_problem reports as it did "Circular reference detected".
_c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_encode: Any = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(
        None, _encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
)


quote = json.encoder.encode_basestring
"""A string as JSON, exactly as :func:`dumps` writes it inside a value (the C function)."""


def dumps(value: Any, *, root: str = "state") -> str:
    """Encode ``value`` as compact JSON, or raise :class:`InvalidState` naming the bad path."""
    try:
        if _encode is not None and not isinstance(value, str):
            return "".join(_encode(value, 0))
        return _encoder.encode(value)
    except (TypeError, ValueError, RecursionError):
        path, reason = _find_problem(value, root)
        raise InvalidState(path, reason) from None


def loads(text: str) -> Any:
    """Decode JSON produced by :func:`dumps`."""
    # The decoder's C scanner, called directly: decode() adds two regex matches around it.
    # Anything but one compact value (spaces, garbage, empty text) takes decode()'s path,
    # which also raises its usual errors.
    try:
        value, end = _scan(text, 0)
    except StopIteration:
        return _decoder.decode(text)
    if end != len(text):
        return _decoder.decode(text)
    return value


def check(value: Any, *, root: str) -> None:
    """Raise :class:`InvalidState` unless ``value`` round-trips through JSON.

    Stricter than :func:`dumps`: it also refuses non-string dict keys, which JSON would
    silently turn into strings.
    """
    dumps(value, root=root)
    problem = _find_problem(value, root, keys_only=True)
    if problem is not None:
        raise InvalidState(*problem)


def _find_problem(value: Any, path: str, *, keys_only: bool = False) -> Any:
    """Walk ``value`` and return ``(path, reason)`` for the first non-JSON value found."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if depth > 200:
            return where, "nested more than 200 levels deep"
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return where, f"key {key!r} is a {type(key).__name__}, not a str"
                stack.append((child, f"{where}[{key!r}]", depth + 1))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif keys_only:
            continue
        elif isinstance(item, float) and not math.isfinite(item):
            return where, f"{item!r} is not a finite number (JSON has no NaN or Infinity)"
        elif not isinstance(item, str | int | float | bool) and item is not None:
            return where, f"a {type(item).__module__}.{type(item).__qualname__} is not JSON"
    if keys_only:
        return None
    return path, "cannot be encoded as JSON"


def json_path(parts: Iterable[str | int]) -> str:
    """Format a path as ``$.transitions[3].target`` (odd keys quoted: ``$["$schema"]``)."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.fullmatch(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out
