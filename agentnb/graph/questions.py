"""Questions a node asks a person (``ctx.interrupt``), and checking the answers.

A question is a JSON object: ``{"question": "Which account?", "schema": {...}}``. The
answer is checked against ``schema``, a JSON Schema restricted to what a form can ask for:
``type`` (``string``, ``number``, ``integer``, ``boolean``, ``array``, ``object``,
``null``, or a list of them), ``enum``, ``const``, ``properties``, ``required``,
``additionalProperties: false``, ``items``, ``minimum``/``maximum``,
``minLength``/``maxLength``, ``minItems``/``maxItems``. Other keywords are refused when
the question is asked, so a schema never silently checks less than it says. No
dependency is needed: the checks are written here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentnb._json import json_path
from agentnb.errors import AgentnbError

__all__ = ["KEYWORDS", "Asked", "answer_problems", "check_question"]

KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "title",
        "description",
        "default",
    }
)
_TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


class Asked(BaseException):
    """Raised by ``ctx.interrupt`` when its question has no answer yet: the run pauses.

    A ``BaseException``, so a node's ``except Exception`` (or a retry policy) cannot
    swallow it.
    """

    def __init__(self, question: dict[str, Any], key: str, index: int) -> None:
        super().__init__(question.get("question"))
        self.question, self.key, self.index = question, key, index


def check_question(question: Any) -> dict[str, Any]:
    """The question as asked, or an error saying what is wrong with it."""
    if not isinstance(question, Mapping):
        question = {"question": question}
    asked: dict[str, Any] = dict(question)
    schema = asked.get("schema", {})
    if not isinstance(schema, Mapping):
        raise AgentnbError(
            f"ctx.interrupt(...): the schema must be a JSON Schema object, not {schema!r}"
        )
    _check_schema(schema, ("schema",))
    return asked


def _check_schema(schema: Mapping[str, Any], path: tuple[str | int, ...]) -> None:
    unknown = sorted(set(schema) - KEYWORDS)
    if unknown:
        raise AgentnbError(
            f"ctx.interrupt(...): {json_path(path)} uses {', '.join(unknown)}, which a question "
            f"cannot check. Use only {', '.join(sorted(KEYWORDS))}"
        )
    types = schema.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in _TYPES:
            raise AgentnbError(
                f"ctx.interrupt(...): {json_path((*path, 'type'))} names {name!r}; "
                f"use one of {', '.join(_TYPES)}"
            )
    for key, sub in dict(schema.get("properties", {})).items():
        _check_schema(sub, (*path, "properties", key))
    if isinstance(schema.get("items"), Mapping):
        _check_schema(schema["items"], (*path, "items"))


def answer_problems(value: Any, schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every way ``value`` breaks ``schema``, as ``(JSON path, what is wrong)``."""
    problems: list[tuple[str, str]] = []
    _validate(value, schema, ("answer",), problems)
    return problems


def _validate(
    value: Any,
    schema: Mapping[str, Any],
    path: tuple[str | int, ...],
    problems: list[tuple[str, str]],
) -> None:
    where = json_path(path)
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_TYPES[n](value) for n in names):
            problems.append((where, f"must be {' or '.join(names)}, not {value!r}"))
            return
    if "enum" in schema and value not in schema["enum"]:
        listing = ", ".join(repr(v) for v in schema["enum"])
        problems.append((where, f"must be one of {listing}, not {value!r}"))
    if "const" in schema and value != schema["const"]:
        problems.append((where, f"must be {schema['const']!r}, not {value!r}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append((where, f"must be at least {schema['minimum']}, not {value}"))
        if "maximum" in schema and value > schema["maximum"]:
            problems.append((where, f"must be at most {schema['maximum']}, not {value}"))
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            problems.append((where, f"must have at least {schema['minLength']} characters"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            problems.append((where, f"must have at most {schema['maxLength']} characters"))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            problems.append((where, f"must have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append((where, f"must have at most {schema['maxItems']} items"))
        items = schema.get("items")
        if isinstance(items, Mapping):
            for i, item in enumerate(value):
                _validate(item, items, (*path, i), problems)
    if isinstance(value, dict):
        properties = dict(schema.get("properties", {}))
        for key in schema.get("required", []):
            if key not in value:
                problems.append((where, f"is missing the required key {key!r}"))
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in properties:
                    problems.append((json_path((*path, key)), "is not a field of this form"))
        for key, sub in properties.items():
            if key in value:
                _validate(value[key], sub, (*path, key), problems)
