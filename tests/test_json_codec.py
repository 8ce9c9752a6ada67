"""agentnb._json: the codec every store writes with (strict, compact, with key paths)."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentnb import InvalidState
from agentnb._json import check, dumps, loads
from agentnb.graph.state import json_copy

# Text with every code point, lone surrogates included (st.text() leaves them out).
_ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=8)
_ATOMS = (
    st.none()
    | st.booleans()
    | st.integers()
    # ints of 4,290 to 4,310 digits, either sign (Python reads back up to 4,300)
    | st.tuples(st.integers(4290, 4310), st.sampled_from([1, -1])).map(
        lambda n: n[1] * (10 ** n[0] - 1)
    )
    | st.floats(allow_nan=True, allow_infinity=True)
    | _ANY_TEXT
)
_VALUES = st.recursive(
    _ATOMS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)


def test_dumps_is_compact_json_that_reads_back() -> None:
    value = {"a": [1, 2.5, None, True, "é"], "b": {"x": (1, 2)}}
    assert dumps(value) == '{"a":[1,2.5,null,true,"é"],"b":{"x":[1,2]}}'
    assert loads(dumps(value)) == json.loads(json.dumps(value))
    assert dumps("s") == '"s"'


@pytest.mark.parametrize(
    ("bad", "path"),
    [({"a": float("nan")}, "state['a']"), ({"a": [1, {2}]}, "state['a'][1]")],
)
def test_dumps_names_the_bad_key_path(bad: Any, path: str) -> None:
    with pytest.raises(InvalidState) as caught:
        dumps(bad)
    assert caught.value.path == path


def test_dumps_of_a_cycle_is_invalid_state_and_the_encoder_still_works() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(InvalidState, match=r"is state\['k'\] itself \(a cycle\)") as caught:
        dumps({"k": cycle})
    assert caught.value.path == "state['k'][0]"
    assert dumps({"k": [1]}) == '{"k":[1]}'


def test_loads_reads_spaced_json_and_refuses_trailing_text() -> None:
    assert loads(' {"a": 1} ') == {"a": 1}
    with pytest.raises(json.JSONDecodeError, match="Extra data"):
        loads('{"a":1} x')
    with pytest.raises(json.JSONDecodeError, match="Expecting value"):
        loads("")


def test_dumps_from_many_threads_gives_each_its_own_text() -> None:
    results: dict[int, list[str]] = {}

    def encode(n: int) -> None:
        results[n] = [dumps({"n": n, "items": list(range(n % 7))}) for _ in range(500)]

    threads = [threading.Thread(target=encode, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, texts in results.items():
        assert set(texts) == {
            json.dumps({"n": n, "items": list(range(n % 7))}, separators=(",", ":"))
        }


@given(_VALUES)
def test_what_dumps_accepts_is_utf8_and_reads_back_and_what_it_refuses_has_a_path(
    value: Any,
) -> None:
    try:
        text = dumps({"v": value})
    except InvalidState as exc:
        refused = exc
    else:
        refused = None
    if refused is not None:
        assert refused.path.startswith("state['v']")
        with pytest.raises(InvalidState):
            check({"v": value}, root="state")
        with pytest.raises(InvalidState):
            json_copy(value)
        return
    assert loads(text.encode("utf-8").decode("utf-8")) == json.loads(text)
    check({"v": value}, root="state")
    assert dumps(json_copy(value)) == dumps(value)


@pytest.mark.parametrize(
    ("bad", "path", "reason"),
    [
        (10**4300, "state", "4,301 digits"),
        ({"a": [0, -(10**5000)]}, "state['a'][1]", "5,001 digits"),
        ({"a": "ok \udc80"}, "state['a']", "lone surrogate"),
        ({"\ud83d": 1}, "state", "key '\\ud83d' holds a lone surrogate"),
    ],
    ids=["int", "nested int", "surrogate", "surrogate key"],
)
def test_an_int_too_long_to_read_back_or_a_lone_surrogate_is_refused_with_its_path(
    bad: Any, path: str, reason: str
) -> None:
    with pytest.raises(InvalidState) as caught:
        dumps(bad)
    assert (caught.value.path, reason in caught.value.reason) == (path, True)
    assert dumps(10**4300 - 1) == "9" * 4300  # the longest int Python reads back
    assert dumps({"a": "naïve 🙂"}) == '{"a":"naïve 🙂"}'


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_json_copy_refuses_a_float_json_has_no_number_for(value: float) -> None:
    # A float is an atom json_copy returns as it is, once known to be storable: NaN and
    # Infinity are not (hypothesis found json_copy(inf) returned inf).
    with pytest.raises(InvalidState, match="not a finite number"):
        json_copy(value)
