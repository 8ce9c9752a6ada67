"""The safe expression evaluator: what it computes, and what it never runs."""

from __future__ import annotations

from typing import Any

import pytest

from agentnb.fsm.expressions import Expression, ExpressionError, Location

NAMES: dict[str, Any] = {
    "n": 3,
    "name": "ada",
    "items": [1, 2, 3],
    "_event": {"name": "go", "data": {"aParam": 2, "list": [4, 5]}},
}


def value(text: str, names: dict[str, Any] | None = None) -> Any:
    return Expression(text).evaluate(NAMES if names is None else names, lambda s: s == "on")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("n ** 2 - 1", 8),
        ("n / 2", 1.5),
        ("n // 2 + n % 2", 2),
        ("-n", -3),
        ("'a' + name", "aada"),
        ("[1, 'x', None, True]", [1, "x", None, True]),
        ("{'k': n}", {"k": 3}),
        ("(1, 2)", (1, 2)),
        ("items[0] + items[-1]", 4),
        ("items[1:]", [2, 3]),
        ("1 < n <= 3", True),
        ("n == 3 and name != 'bob'", True),
        ("n > 5 or name", "ada"),
        ("not items", False),
        ("2 in items", True),
        ("'z' not in name", True),
        ("n if n > 1 else 0", 3),
        ("_event.name", "go"),
        ("_event.data.aParam", 2),
        ("_event.data['list'][1]", 5),
        ("_event.data.get('missing')", None),
        ("name.startswith('a')", True),
        ("len(items) + max(items)", 6),
        ("hasattr(_event, 'data')", True),
        ("In('on') and not In('off')", True),
        ("true and not false", True),
        ("null is None", True),
    ],
)
def test_allowed_expressions_are_evaluated(text: str, expected: Any) -> None:
    assert value(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('echo pwned')",
        "open('/etc/passwd').read()",
        "().__class__.__bases__[0].__subclasses__()",
        "name.__class__",
        "items.__len__()",
        "_event.__class__",
        "(lambda: 1)()",
        "[x for x in items]",
        "eval('1')",
        "exec('x = 1')",
        "getattr(name, 'upper')",
        "globals()",
        "type(n)",
        "'a' * 10 ** 12",
        "[0] * 10 ** 9",
        "10 ** 10 ** 10",
        "(x := 1)",
        "f'{n}'",
        "name.format(n)",
        "items.append(4)",
        "{**_event}",
        "max(*items)",
        "sorted(items, key=len)",
        "missing + 1",
        "1 = 1",
        "return",
        "...",
        "b'bytes'",
        # refused by the allow-list before anything is evaluated (no bound needed)
        "name.upper.__self__",
        "_event.data.__class__",
        "(1).__class__",
        "(lambda x=[0] * 10**9: x)()",
        "{i: i for i in range(10**9)}",
        "sum(range(10**9))",
        "sorted(range(10**9))",
        "1 << 10**9",
        "f'{n:>1000000000}'",
        "'{:>1000000000}'.format(n)",
    ],
)
def test_hostile_or_invalid_expressions_raise_expression_error_and_run_nothing(text: str) -> None:
    before = repr(NAMES)
    with pytest.raises(ExpressionError):
        Expression(text, lenient=True).evaluate(NAMES, lambda s: False)
    assert repr(NAMES) == before


def test_a_deeply_nested_expression_is_refused_not_a_crash() -> None:
    with pytest.raises(ExpressionError):
        Expression("(" * 500 + "1" + ")" * 500, lenient=True).evaluate({}, lambda s: False)


def test_an_over_long_expression_is_refused() -> None:
    with pytest.raises(ExpressionError, match="longer"):
        Expression("1 + " * 5000 + "1")


def test_a_location_assigns_into_names_keys_and_list_items() -> None:
    names: dict[str, Any] = {"a": 0, "d": {"k": {"j": 1}}, "l": [1, 2]}
    Location("a").assign(names, 5, lambda s: False)
    Location("d.k.j").assign(names, 2, lambda s: False)
    Location("d['k']['new']").assign(names, 3, lambda s: False)
    Location("l[0]").assign(names, 9, lambda s: False)
    assert names == {"a": 5, "d": {"k": {"j": 2, "new": 3}}, "l": [9, 2]}


@pytest.mark.parametrize("text", ["1", "f()", "a + b", "'continue'"])
def test_a_location_must_be_a_name_followed_by_keys(text: str) -> None:
    with pytest.raises(ExpressionError):
        Location(text)
    with pytest.raises(ExpressionError):
        Location(text, lenient=True).assign({}, 1, lambda s: False)
