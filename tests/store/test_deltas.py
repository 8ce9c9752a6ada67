"""The delta codec and the chains a writer cuts with it (snapshots, skips, deltas):
every rebuilt state is the original, byte for byte."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb._json import dumps, loads
from agentnb.errors import StoreError
from agentnb.graph.state import append, apply_delta
from agentnb.store import chains
from agentnb.store.chains import DELTA, SKIP, SNAPSHOT, Chain
from agentnb.store.deltas import SnapshotPolicy, apply, diff, diff_at, merge

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


def encode(
    states: list[dict[str, Any]], policy: SnapshotPolicy | None = None
) -> list[tuple[str, str]]:
    """A run's successive states as ``(kind, body)`` rows, cut as the driver cuts them."""
    rows = [(SNAPSHOT, dumps(states[0]))]
    chain = Chain.after(rows[0][1], policy)
    for before, state in itertools.pairwise(states):
        body, chain = chain.next(before, state)
        if body is None:
            rows.append((SNAPSHOT, dumps(state)))
            chain = Chain.after(rows[-1][1], policy)
        else:
            rows.append((chain.last, body))
    return rows


def path(rows: list[tuple[str, str]], index: int) -> list[int]:
    """The rows loading ``index`` reads, newest first: deltas back to an anchor, then
    the anchors back to a snapshot (what SQLite's two index scans find)."""
    found = [index]
    while rows[found[-1]][0] != SNAPSHOT:
        at = found[-1] - 1
        if rows[found[-1]][0] == SKIP:
            while rows[at][0] == DELTA:
                at -= 1
        found.append(at)
    return found


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    start=st.dictionaries(keys, values, max_size=4),
    ops=operations,
    every=st.integers(1, 8),
    max_bytes=st.sampled_from([16, 200, 10**6]),
)
def test_every_state_rebuilt_from_snapshots_skips_and_deltas_is_the_original(
    start: dict[str, Any], ops: list[tuple[str, str, Any]], every: int, max_bytes: int
) -> None:
    states = evolve(start, ops)
    rows = encode(states, SnapshotPolicy(every=every, max_bytes=max_bytes))
    assert rows[0][0] == SNAPSHOT
    numbered = [(step, kind, body) for step, (kind, body) in enumerate(rows)]
    for index, state in enumerate(states):
        # Every row, newest first (the memory store), or the chain alone (SQLite's).
        assert dumps(chains.rebuild(reversed(numbered[: index + 1]))) == dumps(state)
        chain = [numbered[at] for at in path(rows, index)]
        assert dumps(chains.rebuild(chain)) == dumps(state)
        # Fewer than ``every`` deltas, of fewer than max_bytes, before an anchor; fewer
        # than ``every`` skips before the snapshot unless they weigh less than it; and
        # the values they set weigh less than the rest.
        read = [rows[at] for at in path(rows, index)]
        deltas_read = [body for kind, body in read if kind == DELTA]
        assert len(deltas_read) < every
        assert sum(map(len, deltas_read)) < max_bytes
        skips = [loads(body) for kind, body in read if kind == SKIP]
        kept = sum(len(dumps(skip["append"])) for skip in skips if "append" in skip)
        replaced = sum(len(dumps(skip["set"])) for skip in skips if "set" in skip)
        assert len(skips) < every or kept + replaced < len(read[-1][1])
        assert not skips or replaced < kept + len(read[-1][1])
    assert [dumps(s) for s in chains.rebuild_all(numbered)] == [dumps(s) for s in states]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(start=st.dictionaries(keys, values, max_size=4), ops=operations)
def test_a_merged_delta_does_what_the_deltas_do_one_after_the_other(
    start: dict[str, Any], ops: list[tuple[str, str, Any]]
) -> None:
    states = evolve(start, ops)
    for first in range(len(states)):
        found = []
        for before, state in zip(states[first:], states[first + 1 :], strict=False):
            delta = diff(before, state)
            if delta is None:
                break
            found.append(loads(dumps(delta)))
            kept = dumps(found)
            assert dumps(apply(states[first], merge(found))) == dumps(state)
            assert dumps(found) == kept  # the inputs are not changed


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
    assert [kind for kind, _ in rows] == [SNAPSHOT, SNAPSHOT, DELTA]


def test_true_and_one_are_different_values() -> None:
    assert diff({"a": 1}, {"a": True}) == {"set": {"a": True}}
    assert diff({"a": [1]}, {"a": [1.0, 2]}) == {"set": {"a": [1.0, 2]}}


def test_a_chain_without_a_snapshot_is_refused() -> None:
    with pytest.raises(StoreError, match="no snapshot"):
        chains.rebuild([(0, DELTA, '{"set":{"a":1}}')])
    with pytest.raises(StoreError, match="no snapshot"):
        chains.rebuild([(5, SKIP, '{"set":{"a":1}}'), (4, DELTA, '{"set":{"a":0}}')])


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


step_deltas = st.lists(st.dictionaries(keys, values, max_size=3), max_size=12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(start=st.dictionaries(keys, values, max_size=4), deltas=step_deltas)
def test_the_delta_of_a_merged_step_compares_only_its_keys_and_equals_the_full_diff(
    start: dict[str, Any], deltas: list[dict[str, Any]]
) -> None:
    reducers = {"messages": append}  # (it appends to a list: the state starts with one)
    state = {
        **start,
        "messages": start.get("messages") if isinstance(start.get("messages"), list) else [],
    }
    for delta in deltas:
        new = apply_delta(state, delta, reducers)
        tails = {k: v if isinstance(v, list) else [v] for k, v in delta.items() if k in reducers}
        for appended in (None, tails):
            found = diff_at(state, new, delta, appended)
            assert found == diff(state, new, appended)
            assert dumps(apply(state, found)) == dumps(new)  # key order included
            assert list(found.get("set", {})) == [k for k in delta if k in found.get("set", {})]
        state = new


def test_a_chain_stores_the_writers_text_of_a_delta_whose_every_key_changed() -> None:
    old = {"count": 1, "last": "a", "messages": []}
    delta = {"last": "b", "count": 2}
    new = apply_delta(old, delta, {})
    text = dumps(delta)
    body, _ = Chain.after(dumps(old)).next(old, new, changed=delta, text=text)
    assert body == '{"set":' + text + "}"
    # A key that did not change is left out: the text is not the body then.
    same = {"count": 1, "last": "b"}
    body, _ = Chain.after(dumps(old)).next(old, apply_delta(old, same, {}), changed=same, text="!")
    assert body == '{"set":{"last":"b"}}'
    body, _ = Chain.after(dumps(old)).next(old, old, changed={}, text="!")
    assert body == "{}"
