"""Checkpoints stored as a snapshot then deltas, in every backend; any step loads exactly."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from agentnb import END, Checkpointer, MemoryCheckpointer, SqliteCheckpointer, StateGraph
from agentnb._json import dumps
from agentnb.errors import StoreError
from agentnb.store import chains, sql_checkpoints
from agentnb.store.chains import DELTA, SKIP, SNAPSHOT, Chain
from agentnb.store.deltas import SnapshotPolicy
from agentnb.store.sql import SqlCheckpointer


def kinds(store: Checkpointer, run_id: str) -> dict[int, str]:
    """Each step's stored row kind (the latest row of the step)."""
    if isinstance(store, MemoryCheckpointer):
        return {step: row.kind for step, row in sorted(store._checkpoints[run_id].items())}
    assert isinstance(store, SqlCheckpointer)
    with store._using():  # a pooled store's connection, held for this read
        rows = store._db.execute(
            "SELECT step, kind FROM entries WHERE run_id = ? AND state IS NOT NULL ORDER BY seq",
            (run_id,),
        ).fetchall()
    return {step: kind or SNAPSHOT for step, kind in rows}


def chat(store: Checkpointer, steps: int, *, interrupt: bool = False) -> Any:
    g = StateGraph("chat")
    g.add_node(
        "agent",
        lambda s: {"n": s["n"] + 1, "messages": [{"role": "ai", "text": f"m{s['n']}"}]},
    )
    g.add_node("tool", lambda s: {"last": s["n"]})
    g.set_entry_point("agent")
    g.add_conditional_edge("agent", lambda s: "tool" if s["n"] < steps else END, ["tool", END])
    g.add_edge("tool", "agent")
    if interrupt:
        g.add_interrupt_before("tool")
    return g.compile(store, max_steps=10 * steps)


def test_a_long_run_stores_deltas_and_a_skip_every_100_steps(store: Checkpointer) -> None:
    states: list[dict[str, Any]] = []
    workflow = chat(store, 130)
    run = workflow.start({"n": 0, "messages": []})
    states.append(run.state)
    while run.status == "running":
        run.step()
        states.append(run.state)
    stored = kinds(store, run.run_id)
    assert [step for step, kind in stored.items() if kind != DELTA] == [0, 100, 200]
    assert [stored[0], stored[100], stored[200]] == [SNAPSHOT, SKIP, SKIP]
    for step, state in enumerate(states):
        assert store.checkpoint(run.run_id, step).state == state
    assert [cp.state for cp in store.checkpoints(run.run_id)] == states
    assert store.checkpoint(run.run_id).state == states[-1]


def test_a_linear_steps_delta_holds_only_what_its_node_changed_and_rebuilds_exactly(
    store: Checkpointer,
) -> None:
    wide = {f"k{i}": {"v": i} for i in range(20)}
    g = StateGraph("wide", reducers={"log": operator.add, "total": lambda a, b: a + b})
    g.add_node("grow", lambda s: {"history": [*s["history"], s["n"]], "n": s["n"] + 1})
    g.add_node("same", lambda s: {"k3": {"v": 3}, "log": ["same"]})
    g.add_node("add", lambda s: {"total": 2, "fresh": s["n"], "k0": {"v": -1}})
    g.set_entry_point("grow").add_edge("grow", "same").add_edge("same", "add")
    g.add_conditional_edge("add", lambda s: "grow" if s["n"] < 3 else END, ["grow", END])
    run = g.compile(store).start({**wide, "n": 0, "history": [], "log": [], "total": 0})
    states = [run.state]
    while run.status == "running":
        run.step()
        states.append(run.state)
    assert run.status == "completed"
    assert [dumps(cp.state) for cp in store.checkpoints(run.run_id)] == [dumps(s) for s in states]
    for step, state in enumerate(states):
        assert dumps(store.checkpoint(run.run_id, step).state) == dumps(state)
    if isinstance(store, MemoryCheckpointer):
        rows = store._checkpoints[run.run_id]
        assert [rows[step].body for step in (1, 2, 3, 4)] == [
            '{"append":{"history":[0]},"set":{"n":1}}',
            '{"append":{"log":["same"]}}',
            '{"set":{"total":2,"fresh":1,"k0":{"v":-1}}}',  # in the delta's order
            '{"append":{"history":[1]},"set":{"n":2}}',
        ]


def test_an_approval_with_edits_is_stored_as_a_snapshot_and_the_chain_continues_from_it(
    store: Checkpointer,
) -> None:
    run = chat(store, 3, interrupt=True).start({"n": 0, "messages": []})
    run.step()
    assert run.status == "pending"
    run.approve(by="ana", update={"n": 10})
    paused_at = run.steps
    run.run()
    stored = kinds(store, run.run_id)
    assert stored[paused_at] == SNAPSHOT
    assert stored[paused_at + 1] == DELTA
    assert store.checkpoint(run.run_id, paused_at).state["n"] == 10
    assert store.checkpoint(run.run_id).state == run.state
    assert run.state["n"] == 11


def test_a_fork_starts_its_own_chain_with_a_snapshot(store: Checkpointer) -> None:
    workflow = chat(store, 6)
    run = workflow.start({"n": 0, "messages": []}).run()
    fork = run.fork(5, update={"n": 0})
    fork.run()
    stored = kinds(store, fork.run_id)
    assert stored[5] == SNAPSHOT
    assert set(list(stored.values())[1:]) == {DELTA}
    assert store.checkpoint(fork.run_id).state == fork.state
    assert store.checkpoint(run.run_id, 5).state["n"] == 3  # the original is untouched


def test_a_state_loaded_from_the_store_is_followed_by_a_snapshot(store: Checkpointer) -> None:
    workflow = chat(store, 6)
    run = workflow.start({"n": 0, "messages": []})
    run.step()
    again = workflow.attach(run.run_id)  # knows nothing of the chain in the first process
    again.step()
    assert kinds(store, run.run_id) == {0: SNAPSHOT, 1: DELTA, 2: SNAPSHOT}


def test_a_chain_that_ends_before_a_snapshot_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="no snapshot"):
        chains.rebuild([(2, DELTA, '{"set":{"n":2}}'), (1, DELTA, '{"set":{"n":1}}')])
    with pytest.raises(StoreError, match="no step 1"):
        chains.rebuild([(2, DELTA, '{"set":{"n":2}}'), (0, SNAPSHOT, '{"n":0}')])
    with pytest.raises(StoreError, match="no state before it"):
        chains.rebuild_all([(3, DELTA, '{"set":{"n":2}}')])


def test_a_chain_is_cut_with_a_skip_once_its_deltas_pass_the_byte_limit() -> None:
    chain = Chain(policy=SnapshotPolicy(every=100, max_bytes=100))
    delta, chain = chain.next({"m": []}, {"m": ["x" * 60]})
    assert (delta, chain.last, chain.steps) == ('{"append":{"m":["' + "x" * 60 + '"]}}', DELTA, 1)
    delta, chain = chain.next({"m": ["x" * 60]}, {"m": ["x" * 60, "y" * 60]})
    assert delta == '{"append":{"m":["' + "x" * 60 + '","' + "y" * 60 + '"]}}'
    assert (chain.last, chain.steps, chain.skips) == (SKIP, 0, 1)


def test_an_anchor_is_a_snapshot_once_the_skips_would_mostly_carry_replaced_values() -> None:
    policy = SnapshotPolicy(every=1)
    states = [{"doc": letter * 100, "n": 0} for letter in "abc"]
    chain = Chain.after(dumps(states[0]), policy)
    body, chain = chain.next(states[0], states[1])
    assert (body, chain.last) == (dumps({"set": {"doc": "b" * 100}}), SKIP)
    body, chain = chain.next(states[1], states[2])
    assert body is None  # the two skips would set "doc" twice: stored whole instead
    assert chain == Chain(policy=policy)


def test_every_skips_weighing_as_much_as_the_snapshot_make_the_next_anchor_a_snapshot() -> None:
    policy = SnapshotPolicy(every=2)
    state: dict[str, Any] = {"m": []}
    chain = Chain.after(dumps(state), policy)
    found = []
    for _ in range(20):
        new = {"m": [*state["m"], "x" * 10]}
        body, chain = chain.next(state, new)
        found.append("snapshot" if body is None else chain.last)
        if body is None:
            chain = Chain.after(dumps(new), policy)
        state = new
    # An anchor every two steps; a snapshot once two skips hold as many items as the
    # last snapshot: at 4, 8, 16 — ever rarer, as the state grows.
    assert [i for i, kind in enumerate(found, 1) if kind != DELTA] == list(range(2, 21, 2))
    assert [i for i, kind in enumerate(found, 1) if kind == SNAPSHOT] == [4, 8, 16]


def test_a_growing_state_is_cut_by_skips_so_the_file_stays_linear_and_loads_read_few_rows(
    tmp_path: Any,
) -> None:
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        g = StateGraph("loop")
        g.add_node("agent", lambda s: {"n": s["n"] + 1, "messages": ["x" * 200]})
        g.set_entry_point("agent")
        g.add_conditional_edge("agent", lambda s: "agent" if s["n"] < 1000 else END, ["agent", END])
        run = g.compile(store, max_steps=1001).start({"n": 0, "messages": []}).run()
        stored = kinds(store, run.run_id)
        assert [step for step, kind in stored.items() if kind == SNAPSHOT] == [0]
        assert [step for step, kind in stored.items() if kind == SKIP] == list(
            range(100, 1001, 100)
        )
        (size,) = store._db.execute(
            "SELECT sum(length(state)) FROM entries WHERE run_id = ?", (run.run_id,)
        ).fetchone()
        assert size < 2.2 * len(dumps(run.state))  # each message: one delta, one skip
        # Step 999: 99 deltas back to the skip of 900, then 9 skips and the snapshot.
        chain = sql_checkpoints._chain(store._db, run.run_id, 999)
        assert [link.step for link in chain] == [
            *range(999, 899, -1),
            *range(800, 0, -100),
            0,
        ]
        assert store.checkpoint(run.run_id, 999).state["messages"] == ["x" * 200] * 999


@pytest.mark.parametrize("peek", [True, False])
def test_an_edit_made_through_another_connection_is_what_the_chain_continues_from(
    tmp_path: Any, peek: bool
) -> None:
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path) as mine, SqliteCheckpointer(path) as theirs:
        run = chat(mine, 4, interrupt=True).start({"n": 0, "messages": []})
        run.step()
        assert run.status == "pending"
        other = chat(theirs, 4, interrupt=True).attach(run.run_id)  # a CLI, a panel
        other.approve(by="ana", update={"n": 10, "messages": [{"role": "x", "text": "y"}]})
        if peek:
            assert run.state["n"] == 10  # the stale handle sees the decision's state
        run.run()
        states = [cp.state for cp in mine.checkpoints(run.run_id)]
        assert states[-1] == run.state
        assert run.state["n"] == 11
        assert run.state["messages"][-2:] == [
            {"role": "x", "text": "y"},
            {"role": "ai", "text": "m10"},
        ]


def test_the_states_of_every_checkpoint_are_copies_of_their_own(store: Checkpointer) -> None:
    run = chat(store, 3).start({"n": 0, "messages": [], "plan": {"steps": ["a"]}}).run()
    listed = store.checkpoints(run.run_id)
    listed[1].state["plan"]["steps"].append("changed")
    listed[1].state["messages"].append("changed")
    assert listed[2].state["plan"] == {"steps": ["a"]}
    assert [cp.state for cp in store.checkpoints(run.run_id)][2] == listed[2].state
    assert "changed" not in listed[2].state["messages"]


def test_of_a_step_saved_twice_the_latest_row_counts_in_every_rebuild() -> None:
    # Newest first: step 2's edit (a snapshot), its first row, then steps 1 and 0.
    rows = [
        (2, 9, SNAPSHOT, '{"n":20}'),
        (2, 7, DELTA, '{"set":{"n":2}}'),
        (1, 5, DELTA, '{"set":{"n":1}}'),
        (0, 1, SNAPSHOT, '{"n":0}'),
    ]

    def found(links: list[chains.Link]) -> list[tuple[int, int]]:
        return [(link.step, link.key) for link in links]

    assert found(chains.links([(s, k, kind) for s, k, kind, _ in rows])) == [(2, 9)]
    assert found(chains.links([(s, k, kind) for s, k, kind, _ in rows[1:]], 2)) == [
        (2, 7),
        (1, 5),
        (0, 1),
    ]
    assert chains.links([(s, k, kind) for s, k, kind, _ in rows], 3) == []
    delta_first = [rows[1], (2, 6, SNAPSHOT, '{"n":99}'), rows[2], rows[3]]
    assert chains.rebuild([(s, kind, body) for s, _, kind, body in delta_first]) == {"n": 2}
    in_write_order = [(s, kind, body) for s, _, kind, body in reversed(rows)]
    assert chains.rebuild_all(in_write_order) == [{"n": 0}, {"n": 1}, {"n": 20}]


def test_every_checkpoint_row_has_a_kind_and_an_entry_without_one_has_none(
    tmp_path: Any,
) -> None:
    # The indexes are partial on the kind alone (0011): a checkpoint without one would be
    # missing from every load and listing.
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        workflow = chat(store, 30, interrupt=True)
        run = workflow.start({"n": 0, "messages": []})
        run.step()
        run.approve(by="ana", update={"n": 10})  # an edit: a checkpoint, stored whole
        run.step()
        run.step()
        assert run.status == "pending"
        run.reject(by="ana")  # a decision alone: no checkpoint
        rows = store._db.execute(
            "SELECT kind, state IS NOT NULL FROM entries WHERE run_id = ? ORDER BY seq",
            (run.run_id,),
        ).fetchall()
    assert (SNAPSHOT, 1) in rows[1:]
    assert (None, 0) in rows
    assert all((kind is None) == (not has_state) for kind, has_state in rows)


def test_deltas_that_do_not_end_at_the_anchor_found_are_a_damaged_file_error(
    tmp_path: Any,
) -> None:
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        run = chat(store, 3).start({"n": 0, "messages": []}).run()
        # A later row of step 0 that is a delta (seq 2: between step 0's row and step 1's):
        # step 0's anchor is no longer its latest row.
        store._db.execute(
            "INSERT INTO entries (run_id, seq, step, node, state, events, at, kind) "
            "VALUES (?, 2, 0, 'agent', '{}', '[]', 0, 'delta')",
            (run.run_id,),
        )
        with pytest.raises(StoreError, match="damaged"):
            store.checkpoint(run.run_id, 2)
