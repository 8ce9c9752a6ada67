"""Hostile expressions in a running statechart: refused before they allocate, as error.execution.

Each expression is one an attacker could write in a chart file (an ``<assign>``, a ``cond``,
a ``<log>``, a ``<send>`` param). Before the bounds it hung, raised ``MemoryError`` out of
``send()``, or built a value the instance could not commit. Now each one is refused before
it grows anything: the instance raises ``error.execution`` whose message names the limit,
memory stays small (tracemalloc's peak, which does not depend on the machine's load), and
the instance processes its next event as usual. A hang fails on the test's timeout.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from agentnb import State, Statechart
from agentnb.fsm import Assign, Foreach, Log, Send
from agentnb.fsm.expressions import Expression, ExpressionError

PEAK = 64 * 2**20  # bytes one refused evaluation may allocate at its peak (a few MB in fact)
# 999,001 items written out, 8 KB held: the largest shared list within the limit
SHARED = "[x[2:]] * 1000"

DATAMODEL: dict[str, Any] = {
    "x": [0] * 1000,
    "s": "a" * 2000,
    "keys": [f"k{i}" for i in range(2000)],
    "big": "b" * 999_000,
    "d": {},
    "l": [0],
    "out": None,
    "count": 0,
    "errors": [],
}

SIZE, INT, STEPS = "MAX_SIZE", "MAX_INT_DIGITS", "MAX_STEPS"

# expression -> the limit its error names
HOSTILE = {
    # the four reproductions
    "len(str([[0]*1000000]*1000000)) > 0": SIZE,
    "((2**10000)**10000)**10000 > 0": INT,
    "''.join(['a'*1000000]*1000000)": SIZE,
    "[[0]*1000000]*1000000": SIZE,
    # repetition, nested: shared references count as often as they are written out
    "[[[x]*1000]*1000]": SIZE,
    "[x] * 1001": SIZE,
    "[x, x] * 600": SIZE,
    "(x,) * 10**6": SIZE,
    f"[{SHARED}, {SHARED}]": SIZE,
    f"{{'a': {SHARED}, 'b': {SHARED}}}": SIZE,
    f"({SHARED}) + ({SHARED})": SIZE,
    # str()/repr of a shared structure grows with every reference
    "str([[x]*1000]*1000)": SIZE,
    # %-formatting: widths, precisions, '*' arguments, shared values
    "'%1000000000d' % 1": SIZE,
    "'%*d' % (10**9, 1)": SIZE,
    "'%.*f' % (10**8, 1.0)": SIZE,
    "'%(k)s' % {'k': [[x]*1000]*1000}": SIZE,
    # growing string methods
    "(s * 500).replace('a', s * 500)": SIZE,
    "(s * 400).replace('', s)": SIZE,
    "','.join([big, big])": SIZE,
    # ints: power, product, conversion, round
    "2 ** 10**9 > 0": INT,
    "(2**14000) * (2**14000) > 0": INT,
    "10 ** 5000 > 0": INT,
    "int('1' * 100000, 2) > 0": INT,
    "round(5, -10**9)": INT,
    # a chain of operations each within the limits: the budget of steps stops it
    # (two equal lists with no item in common: == compares every item)
    " and ".join([f"{SHARED} == {SHARED}"] * 12): STEPS,
    " + ".join(["len(big * 1)"] * 12): STEPS,
}


def chart(where: str, expr: str) -> Statechart:
    """A chart whose ``go`` evaluates ``expr`` in ``where``; ``ping`` counts, errors are kept."""
    keep_error = Assign("errors", "errors + [_event.data['message']]")
    ping = {"action": [Assign("count", "count + 1")]}
    go: dict[str, Any]
    if where == "assign":
        go = {"action": [Assign("out", expr)]}
    elif where == "cond":
        go = {"target": "other", "guard": expr}
    elif where == "log":
        go = {"action": [Log("hostile", expr)]}
    else:
        go = {"action": [Send("result", params=(("value", Expression(expr)),))]}
    return Statechart(
        "hostile",
        [
            State("idle", on={"go": go, "ping": ping, "error.execution": {"action": [keep_error]}}),
            State("other", on={"ping": ping}),
        ],
        datamodel=DATAMODEL,
    )


def peak_of(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def refused_and_alive(lamp: Any, limit: str) -> None:
    peak = peak_of(lambda: lamp.send("go"))
    assert peak < PEAK
    errors = lamp.context["errors"]
    assert len(errors) == 1
    assert limit in errors[0]
    lamp.send("ping")
    assert lamp.context["count"] == 1
    assert lamp.configuration == {"idle"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("expr", "limit"), HOSTILE.items(), ids=list(HOSTILE))
def test_a_hostile_assign_is_refused_before_it_allocates(expr: str, limit: str) -> None:
    refused_and_alive(chart("assign", expr).start(), limit)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", ["cond", "log", "send"])
@pytest.mark.parametrize(
    "expr",
    [
        "len(str([[0]*1000000]*1000000)) > 0",
        "((2**10000)**10000)**10000 > 0",
        "len(''.join(['a'*1000000]*1000000)) > 0",
        "len([[0]*1000000]*1000000) > 0",
    ],
)
def test_guards_logs_and_send_params_are_bounded_the_same_way(where: str, expr: str) -> None:
    limit = INT if "**" in expr else SIZE
    refused_and_alive(chart(where, expr).start(), limit)


@pytest.mark.timeout(60)
def test_assigning_one_value_under_many_keys_stops_at_the_variables_limit() -> None:
    # Each assignment is small (a reference to big), but the variable would be written out
    # with big 2000 times (2 GB of JSON at the commit): the assignment that would pass
    # MAX_SIZE is refused and the ones before it stand.
    spray = Foreach(array="keys", item="k", body=(Assign("d[k]", "big"),))
    lamp = Statechart(
        "spray",
        [
            State("idle", on={"go": {"action": [spray]}, "error.execution": "refused"}),
            State("refused", on={"ping": {"action": [Assign("count", "count + 1")]}}),
        ],
        datamodel={"keys": DATAMODEL["keys"], "big": "b" * 400_000, "d": {}, "count": 0},
    ).start()
    assert peak_of(lambda: lamp.send("go")) < PEAK
    assert lamp.configuration == {"refused"}
    assert sorted(lamp.context["d"]) == ["k0", "k1"]
    lamp.send("ping")
    assert lamp.context["count"] == 1


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("location", "expr"), [("l[0]", "l"), ("d.k", "[1, d]")])
def test_an_assignment_that_would_make_a_value_contain_itself_is_refused(
    location: str, expr: str
) -> None:
    before = {"l": DATAMODEL["l"], "d": DATAMODEL["d"]}
    broken = Statechart(
        "cycle",
        [
            State(
                "idle",
                on={
                    "go": {"action": [Assign(location, expr)]},
                    "error.execution": {
                        "action": [Assign("errors", "errors + [_event.data['message']]")]
                    },
                    "ping": {"action": [Assign("count", "count + 1")]},
                },
            )
        ],
        datamodel=DATAMODEL,
    ).start()
    broken.send("go")
    assert "contains itself" in broken.context["errors"][0]
    assert {"l": broken.context["l"], "d": broken.context["d"]} == before
    broken.send("ping")
    assert broken.context["count"] == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("len([x] * 999)", 999),  # 999,001 items written out: under the limit
        ("len(str([x[2:]] * 100))", len(str([[0] * 998] * 100))),
        ("'%s has %d items, %.2f%%' % ('x', 3, 99.5)", "x has 3 items, 99.50%"),
        ("'%(n)03d' % {'n': 7}", "007"),
        ("'-'.join(['a', 'b'])", "a-b"),
        ("s.replace('a', 'bb')[:3]", "bbb"),
        ("len(s.split('a'))", 2001),
        ("len(str(2 ** 14000))", 4215),
        ("int('1' * 1000, 2) > 0", True),
        (f"{SHARED} == {SHARED}", True),
        ("sorted(x)[0]", 0),
    ],
)
def test_values_within_the_limits_are_computed_as_before(text: str, expected: Any) -> None:
    assert Expression(text).evaluate(DATAMODEL, lambda s: False) == expected


def test_an_error_names_the_limit_and_the_operation() -> None:
    with pytest.raises(ExpressionError, match=r"the repetition would have a size of more than"):
        Expression("[x] * 10**6").evaluate(DATAMODEL, lambda s: False)
