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

__all__ = [
    "INT_BITS",
    "INT_MAX",
    "MAX_INT_DIGITS",
    "check",
    "dumps",
    "json_path",
    "loads",
    "quote",
    "surrogate",
]

MAX_INT_DIGITS = 4300
"""The most digits a stored int may have: what Python reads back by default
(``sys.get_int_max_str_digits()``); a longer one could be written but never read."""
INT_MAX = 10**MAX_INT_DIGITS - 1
"""Ints are storable when ``-INT_MAX <= n <= INT_MAX``."""
INT_BITS = INT_MAX.bit_length() - 1
"""An int of at most this many bits (``n.bit_length() <= INT_BITS``) is storable: the test
fast paths make (one call, no comparison with a 14,000-bit int); a longer one is
checked exactly, by encoding it."""
surrogate: Any = re.compile("[\ud800-\udfff]").search
"""``surrogate(text)``: the first lone surrogate in ``text`` (a match), or ``None``. A str
holding one is not Unicode text: UTF-8 cannot encode it, so no store can keep it. Only a
str that is not ``isascii()`` (a constant-time test) can hold one."""

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
            text: str = "".join(_encode(value, 0))
        else:
            text = _encoder.encode(value)
    except (TypeError, ValueError, RecursionError):
        path, reason = _find_problem(value, root)
        raise InvalidState(path, reason) from None
    # ensure_ascii=False keeps text as it is, lone surrogates too: refused here, not by
    # a store's UTF-8 encoding (or not at all, in memory).
    if text.isascii() or surrogate(text) is None:
        return text
    path, reason = _find_problem(value, root)
    raise InvalidState(path, reason)


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
    # Each entry: the value, its path, its depth and the containers it sits in (a linked
    # list of (id, path, parent)), so a container found inside itself is named a cycle.
    stack: list[tuple[Any, str, int, Any]] = [(value, path, 0, None)]
    while stack:
        item, where, depth, inside = stack.pop()
        if depth > 200:
            return where, "nested more than 200 levels deep"
        if isinstance(item, dict | list | tuple):
            outer = inside
            while outer is not None:
                if outer[0] == id(item):
                    return where, f"is {outer[1]} itself (a cycle): JSON has no references"
                outer = outer[2]
            inside = (id(item), where, inside)
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    return where, f"key {key!r} is a {type(key).__name__}, not a str"
                if not key.isascii() and surrogate(key):
                    return where, f"key {key!r} {_SURROGATE_REASON}"
                stack.append((child, f"{where}[{key!r}]", depth + 1, inside))
        elif isinstance(item, list | tuple):
            stack.extend(
                (child, f"{where}[{i}]", depth + 1, inside) for i, child in enumerate(item)
            )
        elif keys_only:
            continue
        elif isinstance(item, str):
            if not item.isascii() and surrogate(item):
                return where, f"{_excerpt(item)} {_SURROGATE_REASON}"
        elif isinstance(item, float) and not math.isfinite(item):
            return where, f"{item!r} is not a finite number (JSON has no NaN or Infinity)"
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -INT_MAX <= item <= INT_MAX:
                return where, (
                    f"an int of {_digits(item)} digits is more than the {MAX_INT_DIGITS} "
                    "Python reads back (store it as a str)"
                )
        elif not isinstance(item, float | bool) and item is not None:
            return where, f"a {type(item).__module__}.{type(item).__qualname__} is not JSON"
    if keys_only:
        return None
    return path, "cannot be encoded as JSON"


_SURROGATE_REASON = (
    "holds a lone surrogate, which is not Unicode text (UTF-8 cannot store it; "
    "bytes decoded with errors='surrogateescape' or 'surrogatepass' make them: decode "
    "with errors='replace')"
)


def _excerpt(text: str) -> str:
    """``text``'s repr, cut to about 60 characters around its first lone surrogate."""
    found = surrogate(text)
    start = max(0, (found.start() if found else 0) - 20)
    cut = text[start : start + 60]
    return ("..." if start else "") + repr(cut) + ("..." if start + 60 < len(text) else "")


def _digits(number: int) -> str:
    """About how many decimal digits ``number`` has (without converting it to text)."""
    return f"~{int(abs(number).bit_length() * 0.30103) + 1:,}"


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
