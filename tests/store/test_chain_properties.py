"""Property: whatever the nodes return and the reducers make of it, the state the store
rebuilds at every step — snapshot plus deltas — is the state the live run had."""

from __future__ import annotations

import itertools
import operator
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentnb import (
    Checkpointer,
    MemoryCheckpointer,
    PostgresCheckpointer,
    SqliteCheckpointer,
    StateGraph,
)
from agentnb._json import dumps
from agentnb.store import chains
from agentnb.store.deltas import SnapshotPolicy

scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text(max_size=3)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)
# One node's return value: built-in reducers (messages append, others replace), a custom
# replayable reducer (total: operator.add) and a custom one that depends on something
# outside the delta (stamp: a counter, as a clock or a random draw would).
deltas = st.fixed_dictionaries(
    {},
    optional={
        "messages": st.lists(values, max_size=2),
        "total": st.integers(-5, 5),
        "stamp": values,
        "plan": values,
        "nested": st.dictionaries(st.sampled_from("abc"), values, max_size=2),
    },
)
runs = st.tuples(
    st.lists(deltas, min_size=1, max_size=25),
    st.integers(0, 24),  # where to fork
    st.lists(deltas, max_size=6),  # what the fork's nodes return
    st.fixed_dictionaries(
        {},
        optional={"plan": values, "total": st.integers(-5, 5), "messages": st.lists(values)},
    ),  # the fork's update
)


def workflow(store: Checkpointer, script: list[dict[str, Any]]) -> Any:
    counter = itertools.count()

    def stamp(current: Any, new: Any) -> Any:
        return [new, next(counter)]  # not a function of (current, new) alone

    g = StateGraph("prop", reducers={"total": operator.add, "stamp": stamp})
    g.add_node("act", lambda s: script[s["i"] % len(script)] | {"i": s["i"] + 1})
    g.set_entry_point("act")
    g.add_conditional_edge("act", lambda s: "act", ["act"])
    return g.compile(store, max_steps=1000)


def walk(run: Any, steps: int) -> list[dict[str, Any]]:
    """The live state after each step (the first: before any)."""
    live = [run.state]
    for _ in range(steps):
        run.step()
        live.append(run.state)
    return live


def check_every_step(store: Checkpointer, run_id: str, first: int, live: list[Any]) -> None:
    for offset, state in enumerate(live):
        assert dumps(store.checkpoint(run_id, first + offset).state) == dumps(state)
    assert [dumps(cp.state) for cp in store.checkpoints(run_id)] == [dumps(s) for s in live]


def opened(backend: str, folder: str, request: pytest.FixtureRequest) -> Checkpointer:
    if backend == "memory":
        return MemoryCheckpointer()
    if backend == "sqlite":
        return SqliteCheckpointer(Path(folder) / "p.sqlite3")
    # A schema of its own per example (the fixture's pg_dsn is made once per test).
    cluster = request.getfixturevalue("pg_cluster")
    schema = f"chain_{Path(folder).name.lower().replace('-', '_')}"
    with PostgresCheckpointer(cluster.dsn()) as admin:
        admin._session.raw(f"CREATE SCHEMA {schema}")
    return PostgresCheckpointer(cluster.dsn(options=f"-csearch_path%3D{schema}"))


# ``request`` only looks the session's server up: nothing of it is reset between examples.
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=runs, every=st.integers(1, 6), max_bytes=st.sampled_from([40, 400, 1 << 18]))
def test_the_state_rebuilt_at_every_step_is_the_live_runs(
    request: pytest.FixtureRequest,
    backend: str,
    case: tuple[list[dict[str, Any]], int, list[dict[str, Any]], dict[str, Any]],
    every: int,
    max_bytes: int,
) -> None:
    script, fork_at, fork_script, update = case
    with pytest.MonkeyPatch.context() as patch, tempfile.TemporaryDirectory() as folder:
        patch.setattr(chains, "DEFAULT_POLICY", SnapshotPolicy(every, max_bytes))
        with opened(backend, folder, request) as store:
            start = {"i": 0, "messages": [], "total": 0}
            run = workflow(store, script).start(start)
            live = walk(run, len(script))
            check_every_step(store, run.run_id, 0, live)

            at = min(fork_at, len(script))
            fork = run.fork(at, update=update)
            script[:] = fork_script or [{}]  # what the nodes return from now on
            fork_live = walk(fork, len(fork_script))
            check_every_step(store, fork.run_id, at, fork_live)
            check_every_step(store, run.run_id, 0, live)  # the original is untouched
