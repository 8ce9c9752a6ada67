"""The SQLite journal's reads (agentnb.store.sql_checkpoints, schema 0012): what every walk
and listing reads sits before the bodies, each read searches a key and sorts nothing, no
listing or walk reads a body it does not return, and a run's step never decreases in seq
(which the reads ordered by seq rely on)."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import pytest

from agentnb import END, NodeContext, SqliteCheckpointer, StateGraph, Status
from agentnb.store import sql_checkpoints
from agentnb.store.sql_rows import RUN_SELECT

COLUMNS = ["run_id", "seq", "step", "kind", "node", "at", "tasks", "events", "state"]
PROC_IO = Path("/proc/self/io")


def test_the_journal_keeps_its_small_columns_before_its_bodies_and_one_partial_index(
    tmp_path: Path,
) -> None:
    with SqliteCheckpointer(tmp_path / "a.sqlite3") as store:
        found = [row[1] for row in store._db.execute("PRAGMA table_info(entries)")]
        indexes = store._db.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
            "AND tbl_name = 'entries' AND sql IS NOT NULL"
        ).fetchall()
    assert found == COLUMNS
    # A delta row (the common step) writes the primary key's B-tree alone.
    assert [name for name, _ in indexes] == ["entries_anchors"]
    assert indexes[0][1].endswith("WHERE kind <> 'delta'")


READS = {
    "latest": (sql_checkpoints._LATEST, ("r",)),
    "anchors": (sql_checkpoints._ANCHORS, ("r", 500)),
    "deltas": (sql_checkpoints._DELTAS, ("r", 40, 500, 61)),
    "bodies": (sql_checkpoints._BODIES, ("r", 40, 90)),
    "head": (sql_checkpoints._HEAD, ("r", 90)),
    "listing": (sql_checkpoints._LISTING, ("r",)),
    "listing on": (sql_checkpoints._LISTING_ON, ("r",)),
    "run": (f"{RUN_SELECT} WHERE r.run_id = ?", ("r",)),
}


@pytest.mark.parametrize("name", READS)
def test_every_read_of_the_journal_searches_a_key_and_sorts_nothing(
    name: str, tmp_path: Path
) -> None:
    sql, params = READS[name]
    with SqliteCheckpointer(tmp_path / "a.sqlite3") as store:
        plan = [row[3] for row in store._db.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert searches, plan
    assert all(step.startswith("SEARCH") for step in searches), plan  # no full scan
    assert not any("TEMP B-TREE" in step for step in plan), plan  # no sort
    on_entries = [step for step in searches if step.startswith(("SEARCH entries", "SEARCH e "))]
    assert on_entries, plan
    assert all(
        "USING PRIMARY KEY" in step or "USING COVERING INDEX entries_anchors" in step
        for step in on_entries
    ), plan


def bytes_read() -> int:
    """What this process has read through read(2) and pread(2) so far (Linux)."""
    for line in PROC_IO.read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def heavy(store: SqliteCheckpointer) -> Any:
    """A loop appending a message a step, its first step adding a big text to the state:
    step 1 is an anchor holding the text, step 20 a snapshot of it (saved again by an
    approval with edits), step 1's event and the run's last one carry it, and the steps
    after 20 are deltas and skips."""

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        added = {"messages": [f"message number {len(state['messages'])}"]}
        return added if "blob" in state else {**added, "blob": "x" * BIG}

    g = StateGraph("heavy")
    g.add_node("agent", agent)
    g.add_node("check", lambda s: None)
    g.set_entry_point("agent")
    g.add_conditional_edge(
        "agent",
        lambda s: (
            "check" if len(s["messages"]) == 20 else ("agent" if len(s["messages"]) < 300 else END)
        ),
        ["agent", "check", END],
    )
    g.add_edge("check", "agent")
    g.add_interrupt_before("check")
    return g.compile(store, max_steps=5000)


BIG = 4 * 1024 * 1024
"""The big text's length: each snapshot and each event carrying it is at least this."""
FEW = 1024 * 1024
"""What a read that touches no body may read, at most (a quarter of one body)."""


@pytest.mark.skipif(not PROC_IO.exists(), reason="counts read syscalls through /proc/self/io")
def test_listing_and_walking_a_run_with_big_snapshots_reads_none_of_their_bodies(
    tmp_path: Path,
) -> None:
    path = tmp_path / "heavy.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = heavy(store).start({"messages": []}).run()
        assert (run.status, run.record.step) == (Status.PENDING, 20)
        run.approve(by="ada", update={"tag": "edited"})
        run.run()
        assert run.status == Status.COMPLETED
        run_id, last = run.run_id, run.record.step
        kinds = dict(
            store._db.execute("SELECT step, kind FROM entries WHERE run_id = ?", (run_id,))
        )
        stored = store._db.execute(
            "SELECT sum(length(state)) + sum(length(events)) FROM entries WHERE run_id = ?",
            (run_id,),
        ).fetchone()[0]
    assert stored > 4 * BIG  # two anchors, two events carrying the text
    assert (last, kinds[20], kinds[120], kinds[220]) == (301, "snapshot", "skip", "skip")

    def reading(call: Any) -> tuple[int, Any]:
        with SqliteCheckpointer(path) as fresh:  # an empty page cache; the WAL folded in
            before = bytes_read()
            result = call(fresh)
            return bytes_read() - before, result

    # The listing: one seek to the run's first entry (small), its rows read up to ``at``.
    listed, infos = reading(lambda s: s.list_checkpoints(run_id))
    assert [i.step for i in infos] == list(range(last + 1))
    assert listed < FEW
    # Step 290: the deltas back to step 220's skip, the skips back to step 20's snapshot,
    # then their bodies: step 20's row alone holds the text among them (not step 1's, not
    # the events carrying it). SQLite reads a row bigger than its page twice, straight
    # from the file: once whole to compare its key on the seek, once for the column.
    walked, chain = reading(lambda s: sql_checkpoints._chain(s._db, run_id, 290))
    assert [link.step for link in chain] == [*range(290, 219, -1), 120, 20]
    assert walked < FEW  # the walk alone: no body
    loaded, state = reading(lambda s: s.checkpoint(run_id, 290).state)
    assert (len(state["messages"]), state["tag"], len(state["blob"])) == (289, "edited", BIG)
    assert BIG < loaded < 2 * BIG + FEW


def test_a_runs_step_never_decreases_in_seq_through_edits_answers_branches_forks_subgraphs(
    tmp_path: Path,
) -> None:
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        # Approve with edits, then a rejection.
        g = StateGraph("chat")
        g.add_node("agent", lambda s: {"n": s["n"] + 1, "messages": [f"m{s['n']}"]})
        g.add_node("tool", lambda s: {"last": s["n"]})
        g.set_entry_point("agent")
        g.add_conditional_edge("agent", lambda s: "tool" if s["n"] < 9 else END, ["tool", END])
        g.add_edge("tool", "agent")
        g.add_interrupt_before("tool")
        chat = g.compile(store, max_steps=100)
        run = chat.start({"n": 0, "messages": []}).run()
        run.approve(by="ada", update={"n": 5})
        run.run()
        run.reject(by="ada")
        # A fork from an early step, run to its end without interrupts.
        fork = chat.attach(run.run_id).fork(1, update={"n": 8}).run()
        fork.approve(by="bob")
        fork.run()

        # A question a node asks, answered.
        def pay(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
            return {"amount": ctx.interrupt({"question": "How much?"})}

        asked = StateGraph("ask").add_node("pay", pay).set_entry_point("pay").compile(store)
        question = asked.start({}).run()
        question.respond(250, by="ada")
        question.run()

        # Parallel branches with a held task, and a subgraph paused inside.
        fan = StateGraph("branches", reducers={"done": operator.add})
        fan.add_node("plan", lambda s: None)
        for name in ("b", "c", "d"):
            fan.add_node(name, lambda s, name=name: {"done": [name]})
        fan.add_node("report", lambda s: {"count": len(s["done"])})
        fan.set_entry_point("plan")
        for name in ("b", "c", "d"):
            fan.add_edge("plan", name)
        fan.add_edge(["b", "c", "d"], "report")
        fan.add_interrupt_before("c", "d")
        branches = fan.compile(store).start({"done": []}).run()
        branches.approve(by="ada", task="d", update={"done": ["edited"]})
        branches.approve(by="ada")
        branches.run()
        inner = StateGraph("inner").add_node("look", lambda s: {"seen": True})
        inner.set_entry_point("look").add_interrupt_before("look")
        outer = StateGraph("outer").add_node("first", lambda s: {"x": 1})
        outer.add_node("inner", inner).set_entry_point("first").add_edge("first", "inner")
        nested = outer.compile(store).start({}).run()
        nested.approve(by="ada")
        nested.run()

        statuses = {r.run_id: r.status for r in store.list_runs()}
        assert len(statuses) == 6  # 4 workflows, a fork and a subgraph's run
        assert set(statuses.values()) == {Status.COMPLETED, Status.REJECTED}
        db = store._db
        for run_id in statuses:
            steps = [s for (s,) in db.execute(_STEPS, (run_id,))]
            assert steps == sorted(steps), run_id
        assert db.execute("SELECT count(*) FROM entries WHERE tasks IS NOT NULL").fetchone()[0]
        assert db.execute(
            "SELECT count(*) FROM (SELECT run_id, step FROM entries WHERE kind IS NOT NULL "
            "GROUP BY 1, 2 HAVING count(*) > 1)"
        ).fetchone()[0]  # steps saved twice (the edits) are among them


_STEPS = "SELECT step FROM entries WHERE run_id = ? ORDER BY seq"
