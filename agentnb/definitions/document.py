"""Reading definition documents (JSON or YAML) defensively, and explaining schema errors.

Every way a document can be broken ends as one :class:`~agentnb.errors.SchemaError`: bytes
that are not UTF-8 (a UTF-8 byte-order mark is accepted and skipped; UTF-16 is reported),
a document over :data:`MAX_BYTES`, nesting deeper than :data:`MAX_DEPTH` (checked *before*
parsing, so no parser recurses into it), malformed JSON or YAML (with line and column),
duplicate keys (JSON and YAML silently keep the last one), YAML aliases and tags, and values
JSON cannot hold, each at its JSON path with a fix. Schema violations are explained the same
way by :mod:`agentnb.definitions.schema`.

This module knows nothing about what a document defines: flat machines, statecharts,
XState configs and workflow graphs are all read by :func:`parse_document`, then checked by
:func:`agentnb.definitions.schema.schema_problems` against their own schema.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from agentnb._json import json_path
from agentnb.errors import MissingDependency, SchemaError, SchemaProblem

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_PROBLEMS",
    "MORE_PROBLEMS",
    "Document",
    "Format",
    "Source",
    "json_path",
    "parse_document",
    "read_source",
]

Format: TypeAlias = Literal["json", "yaml"]
Source: TypeAlias = str | bytes | os.PathLike[str]

MAX_BYTES = 1_000_000
"""Larger documents are refused unread: a definition is a few kilobytes."""
MAX_DEPTH = 32
"""Deeper nesting is refused before parsing; a definition nests four levels."""
MAX_ITEMS = 10_000
"""Longer lists and objects are refused before validation, which would crawl through them."""
MAX_PROBLEMS = 100
"""Problems past this many are not listed; :data:`MORE_PROBLEMS` says so instead."""
MORE_PROBLEMS = SchemaProblem("$", "more problems follow; they are not listed", "Fix these first")

# A JSON string runs to its closing quote or to the end of the text. The possessive ``*+``
# never backtracks, so a hostile run of quotes and backslashes stays linear.
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)


@dataclass(frozen=True, slots=True)
class Document:
    """A parsed document: JSON-typed ``data``, where it came from, a digest of its bytes."""

    data: Any
    source: str
    format: Format
    digest: str
    problems: tuple[SchemaProblem, ...] = ()
    """Problems found while reading that left the data readable."""


def _fail(message: str, fix: str, source: str, path: str = "$") -> SchemaError:
    return SchemaError([SchemaProblem(path, message, fix)], source=source)


def read_source(
    source: Source, format: Format | None = None
) -> tuple[str | bytes, str, Format | None]:
    """Return ``(content, label, format)`` for a path, a document string, or bytes.

    A ``str`` is a document when it contains a newline or starts with ``{`` or ``[``
    (or is blank); otherwise it is a file path. Pass a :class:`pathlib.Path` to be explicit.
    """
    if isinstance(source, bytes):
        return source, "<bytes>", format
    if isinstance(source, str):
        head = source.lstrip("\ufeff \t\r")
        if not head or "\n" in source or head.startswith(("{", "[")):
            return source, "<text>", format
    path = os.fspath(source)
    if format is None:
        suffix = os.path.splitext(path)[1].lower()
        format = "json" if suffix == ".json" else "yaml" if suffix in (".yaml", ".yml") else None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise _fail(
            f"cannot read the file: {error.strerror or error}",
            "Check the path (a str without a newline is taken as a file name)",
            path,
        ) from None
    return raw, path, format


def _decode(content: str | bytes, source: str) -> str:
    if isinstance(content, str):
        text = content.removeprefix("\ufeff")
    else:
        if content.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
            raise _fail("the document is UTF-32 encoded", "Save it as UTF-8", source)
        if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            raise _fail("the document is UTF-16 encoded", "Save it as UTF-8", source)
        # Windows editors often write a UTF-8 byte-order mark; it carries no meaning.
        content = content.removeprefix(codecs.BOM_UTF8)
        if len(content) > MAX_BYTES:
            raise _too_large(source)
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _fail(
                f"the document is not valid UTF-8 (byte {error.start}: {error.reason})",
                "Save it as UTF-8",
                source,
            ) from None
    if len(text) > MAX_BYTES:
        raise _too_large(source)
    if not text.strip():
        raise _fail(
            "the document is empty",
            "Write an object with name, states, initial and transitions",
            source,
        )
    return text


def _too_large(source: str) -> SchemaError:
    return _fail(
        f"the document is larger than {MAX_BYTES} bytes",
        "A definition is a few kilobytes: check that this is the right file",
        source,
    )


def parse_document(content: str | bytes, *, source: str, format: Format | None) -> Document:
    """Decode and parse ``content`` into JSON-typed data.

    ``format`` ``None`` sniffs: text starting with ``{`` or ``[`` is JSON, anything else YAML.
    Problems that leave the data readable (duplicate keys, values JSON cannot hold, which
    become ``null``) are returned in :attr:`Document.problems`, so they can be reported with
    the schema's; the rest raise.

    Raises:
        SchemaError: the content cannot be read as a document at all.
    """
    text = _decode(content, source)
    raw = content if isinstance(content, bytes) else text.encode("utf-8", "surrogatepass")
    if format is None:
        format = "json" if text.lstrip().startswith(("{", "[")) else "yaml"
    problems: list[SchemaProblem] = []
    data = _parse_json(text, problems) if format == "json" else _parse_yaml(text, problems)
    if data is _UNREADABLE:
        raise SchemaError(problems[:MAX_PROBLEMS], source=source)
    oversized = _oversized(data)
    if oversized is not None:
        raise SchemaError([oversized], source=source)
    data = _plain(data, [], problems)
    return Document(data, source, format, hashlib.sha256(raw).hexdigest(), tuple(problems))


_UNREADABLE: Any = object()


# -- JSON --------------------------------------------------------------------------------


class _JsonObject(dict[str, Any]):
    """A parsed JSON object that remembers the keys it saw twice."""

    duplicates: tuple[str, ...] = ()


def _pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject()
    duplicates = []
    for key, value in pairs:
        if key in obj:
            duplicates.append(key)
        obj[key] = value
    obj.duplicates = tuple(duplicates)
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value (JSON has no NaN or Infinity)")


def _parse_json(text: str, problems: list[SchemaProblem]) -> Any:
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                line = text.count("\n", 0, match.start()) + 1
                problems.append(_too_deep(f"line {line}"))
                return _UNREADABLE
        elif token in "]}":
            depth -= 1
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        problems.append(
            SchemaProblem(
                "$",
                f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}",
                "Check the commas, quotes and brackets just before that position",
            )
        )
    except (ValueError, RecursionError) as error:  # huge integers, NaN; depth is pre-checked
        problems.append(SchemaProblem("$", f"invalid JSON: {error}", "Fix that value"))
    return _UNREADABLE


def _too_deep(where: str) -> SchemaProblem:
    return SchemaProblem(
        "$",
        f"the document is nested more than {MAX_DEPTH} levels deep (at {where})",
        "A definition nests a few levels: check for runaway brackets",
    )


# -- YAML --------------------------------------------------------------------------------


def _parse_yaml(text: str, problems: list[SchemaProblem]) -> Any:
    try:
        import yaml
    except ImportError:
        raise MissingDependency("pyyaml", "config", "reading YAML definitions") from None
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        # The event stream is flat, so depth and aliases are checked before anything
        # recursive (the composer) sees the document.
        depth = 0
        for event in yaml.parse(text, Loader=loader_class):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    problems.append(_too_deep(_line(event.start_mark)))
                    return _UNREADABLE
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                problems.append(
                    SchemaProblem(
                        "$",
                        f"YAML alias *{event.anchor} at {_line(event.start_mark)}: "
                        "aliases and anchors are not supported",
                        "Write the value out in full",
                    )
                )
                return _UNREADABLE
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            if node is None:
                problems.append(
                    SchemaProblem(
                        "$",
                        "the document is empty",
                        "Write a mapping with name, states, initial and transitions",
                    )
                )
                return _UNREADABLE
            problems.extend(_yaml_duplicates(node, yaml))
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = "; ".join(p for p in (error.context, error.problem) if p) or "unreadable"
        if "tag" in problem:
            fix = "Only plain YAML data is allowed: remove the tag"
        elif "single document" in problem:
            fix = "Keep one document: remove the '---' line and what follows it"
        else:
            fix = "Check the indentation, colons and quotes just before that position"
        problems.append(SchemaProblem("$", f"invalid YAML{where}: {problem}", fix))
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as error:
        problems.append(SchemaProblem("$", f"invalid YAML: {error}", "Fix that value"))
    return _UNREADABLE


def _line(mark: Any) -> str:
    return f"line {mark.line + 1}" if mark is not None else "an unknown line"


def _yaml_duplicates(root: Any, yaml: Any) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    stack: list[tuple[Any, list[str | int]]] = [(root, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            first_line: dict[str, int] = {}
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                line = key_node.start_mark.line + 1
                if key in first_line:
                    problems.append(
                        SchemaProblem(
                            json_path([*path, key]),
                            f"duplicate key {key!r} at line {line} (first at line "
                            f"{first_line[key]})",
                            "Remove one: YAML would silently keep the last",
                        )
                    )
                first_line.setdefault(key, line)
                stack.append((value_node, [*path, key]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((child, [*path, i]) for i, child in enumerate(node.value))
    return problems


# -- plain JSON values -------------------------------------------------------------------


def _oversized(data: Any) -> SchemaProblem | None:
    stack: list[tuple[Any, list[str | int]]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict | list):
            if len(value) > MAX_ITEMS:
                return SchemaProblem(
                    json_path(path),
                    f"has {len(value)} entries; at most {MAX_ITEMS} are read",
                    "A definition is a few kilobytes: check that this is the right file",
                )
            items = value.items() if isinstance(value, dict) else enumerate(value)
            stack.extend((child, [*path, key]) for key, child in items)
    return None


def _plain(value: Any, path: list[str | int], problems: list[SchemaProblem]) -> Any:
    """``value`` as plain JSON types; anything JSON cannot hold becomes a problem."""
    if isinstance(value, dict):
        for key in getattr(value, "duplicates", ()):
            problems.append(
                SchemaProblem(
                    json_path([*path, key]),
                    f"duplicate key {key!r}",
                    "Remove one: JSON parsers silently keep the last",
                )
            )
        out: dict[str, Any] = {}
        for key, child in value.items():
            if not isinstance(key, str):
                problems.append(
                    SchemaProblem(
                        json_path(path),
                        f"key {key!r} is not a string",
                        "Quote the key",
                    )
                )
                continue
            out[key] = _plain(child, [*path, key], problems)
        return out
    if isinstance(value, list):
        return [_plain(child, [*path, i], problems) for i, child in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(
            SchemaProblem(json_path(path), f"{value} is not a JSON number", "Use a finite number")
        )
        return None
    if not (value is None or isinstance(value, str | int | float | bool)):
        problems.append(
            SchemaProblem(
                json_path(path),
                f"a YAML {type(value).__name__} value is not allowed here",
                "Quote it to make it a string",
            )
        )
        return None
    return value
