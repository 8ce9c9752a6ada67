"""agentnb._json: the codec every store writes with (strict, compact, with key paths)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from agentnb import InvalidState
from agentnb._json import dumps, loads


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
    with pytest.raises(InvalidState, match="nested more than 200 levels"):
        dumps({"k": cycle})
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
