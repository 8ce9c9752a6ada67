"""JSON Schema validation whose errors read as fixes, at JSON paths.

jsonschema's own messages describe the schema (``'initial' is a required property``); these
describe the document and what to write instead, using the ``description`` of each property
in the schema as the hint.
"""

from __future__ import annotations

import difflib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentnb.definitions.document import MAX_PROBLEMS, MORE_PROBLEMS, json_path
from agentnb.definitions.names import NAME_MAX_LENGTH, NAME_PATTERN
from agentnb.errors import MissingDependency, SchemaProblem

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

__all__ = ["load_schema", "schema_problems"]


def load_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped as package data."""
    from importlib import resources  # with tempfile, shutil, lzma...: when one is read

    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_problems(data: Any, schema: Mapping[str, Any]) -> tuple[list[SchemaProblem], bool]:
    """Violations of ``schema`` (draft 2020-12) in ``data``, as readable problems.

    Returns:
        ``(problems, complete)``: ``complete`` is False when more than
        :data:`MAX_PROBLEMS` violations exist and only the first were explained.
    """
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        raise MissingDependency("jsonschema", "config", "validating definitions") from None
    validator = Draft202012Validator(schema)
    # Errors come lazily: stop once there are more than anyone will read.
    errors = list(itertools.islice(validator.iter_errors(data), MAX_PROBLEMS + 1))
    complete = len(errors) <= MAX_PROBLEMS
    problems: list[SchemaProblem] = []
    for error in sorted(errors[:MAX_PROBLEMS], key=lambda e: _order(e.absolute_path)):
        problems.extend(_explain(error))
    if not complete:
        problems.append(MORE_PROBLEMS)
    return list(dict.fromkeys(problems)), complete


def _order(path: Iterable[str | int]) -> tuple[tuple[int, str, int], ...]:
    return tuple((1, p, 0) if isinstance(p, str) else (0, "", p) for p in path)


_TYPES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool) or value is None:
        return _short(value)
    kind = "string" if isinstance(value, str) else "number"
    return f"the {kind} {_short(value)}"


def _expected(types: str | Sequence[str]) -> str:
    names = [types] if isinstance(types, str) else list(types)
    return " or ".join(_TYPES.get(t, t) for t in names)


def _explain(error: ValidationError) -> list[SchemaProblem]:
    path = list(error.absolute_path)
    where = json_path(path)
    keyword = error.validator
    value = error.instance
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    properties = schema.get("properties", {})
    if (
        keyword == "required"
        and isinstance(value, dict)
        and isinstance(error.validator_value, list)
    ):
        return [
            SchemaProblem(
                json_path([*path, key]),
                f"required key {key!r} is missing",
                f"Add {key!r}: {properties.get(key, {}).get('description', 'see the schema')}",
            )
            for key in error.validator_value
            if key not in value
        ]
    if keyword == "additionalProperties" and isinstance(value, dict):
        return [
            SchemaProblem(
                json_path([*path, key]), f"unknown key {key!r}", _did_you_mean(key, properties)
            )
            for key in value
            if key not in properties
        ]
    if keyword in ("anyOf", "oneOf") and isinstance(error.context, list) and error.context:
        return _explain_choice(error, where)
    message, fix = _message(keyword, error.validator_value, value)
    return [SchemaProblem(where, message or error.message, fix)]


def _did_you_mean(key: str, allowed: Iterable[str]) -> str:
    names = sorted(allowed)
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"Did you mean {close[0]!r}? " if close else "Remove it. "
    return hint + "Allowed keys: " + ", ".join(names)


def _message(keyword: Any, expected: Any, value: Any) -> tuple[str, str]:
    if keyword == "type":
        fix = f"Write {_expected(expected)}"
        if isinstance(value, bool) and "string" in expected:
            fix += " (in YAML, quote words like on, off, yes and no)"
        return f"must be {_expected(expected)}, not {_describe(value)}", fix
    if keyword == "pattern" and expected == NAME_PATTERN:
        return (
            f"{_short(value)} is not a valid name",
            "Names start with a letter or '_' and contain only letters, digits, '_', '.' "
            f"and '-'; at most {NAME_MAX_LENGTH} characters",
        )
    if keyword == "minLength":
        return "must not be empty", "Write at least one character"
    if keyword == "maxLength":
        return f"is {len(value)} characters long; at most {expected} are allowed", "Shorten it"
    if keyword == "minItems":
        return f"must have at least {expected} item(s)", "Add the missing items"
    if keyword == "maxItems":
        return f"has {len(value)} items; at most {expected} are allowed", "Split the definition"
    if keyword in ("const", "enum"):
        options = [expected] if keyword == "const" else expected
        listing = " or ".join(_short(o) for o in options)
        return f"must be {listing}, not {_describe(value)}", f"Write {listing}"
    return "", "See the schema"


def _explain_choice(error: ValidationError, where: str) -> list[SchemaProblem]:
    """An anyOf/oneOf failed: explain the branch that fits the value's type, if one does."""
    branches: dict[Any, list[ValidationError]] = {}
    for sub in error.context if isinstance(error.context, list) else []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    types: list[str] = []
    for subs in branches.values():
        wrong_type = [s for s in subs if s.validator == "type" and not s.relative_path]
        if not wrong_type:
            return [problem for sub in subs for problem in _explain(sub)]
        types.append(str(wrong_type[0].validator_value))
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    return [
        SchemaProblem(
            where,
            f"must be {_expected(types)}, not {_describe(error.instance)}",
            f"Write {schema.get('description', _expected(types))}",
        )
    ]
