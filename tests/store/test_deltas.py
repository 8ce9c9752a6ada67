"""The delta + snapshot codec: every rebuilt state is the original, byte for byte."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb._json import dumps
from agentnb.store.deltas import Row, SnapshotPolicy, apply, diff, encode, rebuild

scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-2, 2) | st.text(max_size=3)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=8,
)
keys = st.sampled_from(["messages", "count", "plan", "x", "y"])
# What a step can do to a state: reducers append to a list, replace a value, add a key,
# rewrite a list (not at its end), drop a key or reorder the keys (a custom reducer may),
# swap a number for an equal one of another JSON type (1, 1.0, true).
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), keys, st.lists(values, min_size=1, max_size=3)),
        st.tuples(st.just("set"), keys, values),
        st.tuples(st.just("rewrite"), keys, st.lists(values, max_size=3)),
        st.tuples(st.just("drop"), keys, st.none()),
        st.tuples(st.just("none"), keys, st.none()),
        st.tuples(st.just("reorder"), keys, st.none()),
        st.tuples(st.just("retype"), keys, st.sampled_from([1, 1.0, True, 0, 0.0, False])),
    ),
    max_size=40,
)


def evolve(start: dict[str, Any], ops: list[tuple[str, str, Any]]) -> list[dict[str, Any]]:
    states = [start]
    for op, key, arg in ops:
        state = dict(states[-1])
        if op == "append":
            old = state.get(key)
            state[key] = [*(old if isinstance(old, list) else []), *arg]
        elif op in ("set", "rewrite"):
            state[key] = arg
        elif op == "drop":
            state.pop(key, None)
        elif op == "reorder":
            state = dict(reversed(state.items()))
        elif op == "retype":
            state[key] = arg
        states.append(state)
    return states


@settings(max_examples=300, deadline=None)
@given(
    start=st.dictionaries(keys, values, max_size=4),
    ops=operations,
    every=st.integers(1, 8),
    max_bytes=st.sampled_from([16, 200, 10**6]),
)
def test_every_state_rebuilt_from_deltas_and_snapshots_is_the_original(
    start: dict[str, Any], ops: list[tuple[str, str, Any]], every: int, max_bytes: int
) -> None:
    states = evolve(start, ops)
    rows = encode(states, SnapshotPolicy(every=every, max_bytes=max_bytes))
    assert rows[0].kind == "snapshot"
    for index, state in enumerate(states):
        assert dumps(rebuild(rows, index)) == dumps(state)
    # The chain from a snapshot is bounded by the policy: its deltas weigh less than
    # max_bytes, and once it is ``every`` steps long, less than the snapshot itself.
    run = weight = base = 0
    for row in rows:
        if row.kind == "snapshot":
            run, weight, base = 0, 0, len(dumps(row.body))
            continue
        run, weight = run + 1, weight + len(dumps(row.body))
        assert weight < max_bytes
        assert run < every or weight < base


def test_a_growing_list_is_stored_as_its_tail_and_a_changed_key_as_its_value() -> None:
    old = {"count": 1, "messages": ["a", "b"]}
    new = {"count": 2, "messages": ["a", "b", "c"], "plan": "p"}
    assert diff(old, new) == {"append": {"messages": ["c"]}, "set": {"count": 2, "plan": "p"}}
    assert apply(old, diff(old, new) or {}) == new
    assert old == {"count": 1, "messages": ["a", "b"]}  # the inputs are not changed


def test_a_dropped_key_or_a_new_key_order_makes_a_snapshot() -> None:
    assert diff({"a": 1, "b": 2}, {"a": 1}) is None
    assert diff({"a": 1, "b": 2}, {"b": 2, "a": 1}) is None
    rows = encode([{"a": 1, "b": 2}, {"a": 1}, {"a": 1, "c": True}])
    assert [r.kind for r in rows] == ["snapshot", "snapshot", "delta"]


def test_true_and_one_are_different_values() -> None:
    assert diff({"a": 1}, {"a": True}) == {"set": {"a": True}}
    assert diff({"a": [1]}, {"a": [1.0, 2]}) == {"set": {"a": [1.0, 2]}}


def test_a_chain_without_a_snapshot_is_refused() -> None:
    with pytest.raises(ValueError, match="no snapshot"):
        rebuild([Row("delta", {"set": {"a": 1}})], 0)


def test_a_tail_the_writer_says_it_appended_is_taken_without_comparing_the_kept_part() -> None:
    kept = [{"text": str(i)} for i in range(1000)]
    old = {"messages": kept, "n": 1}
    new = {"messages": [*kept, {"text": "new"}], "n": 2}
    delta = diff(old, new, {"messages": [{"text": "new"}]})
    assert delta == {"append": {"messages": [{"text": "new"}]}, "set": {"n": 2}}
    assert dumps(apply(old, delta or {})) == dumps(new)
    # A hint that does not fit the lengths is not trusted: the lists are compared.
    assert diff(old, {"messages": [{"text": "x"}], "n": 1}, {"messages": ["y"]}) == {
        "set": {"messages": [{"text": "x"}]}
    }
