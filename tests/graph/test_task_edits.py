"""Approve with edits when a superstep holds several tasks: the edit is that task's input
and a write of the resumed superstep (merged through the reducers, before the tasks'
results); the other held tasks run on the state their approvers were shown."""

from __future__ import annotations

import asyncio
import io
import json
import operator
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentnb import (
    Checkpointer,
    ConflictingEdit,
    ConflictingUpdate,
    EventType,
    InvalidDecision,
    SqliteCheckpointer,
    StateGraph,
    Status,
    TaskNotNamed,
    Workflow,
)
from agentnb.cli import main
from tests.conftest import Driver
from tests.processes import python

ROOT = Path(__file__).parents[2]


def review(store: Checkpointer | None = None) -> Workflow:
    """plan -> (b, c, d) -> report; b and d are held. Each branch says what it saw."""

    def branch(name: str) -> Any:
        def node(state: dict[str, Any]) -> dict[str, Any]:
            seen = {"seen": [f"{name}:{state['amount']}:{state.get(f'{name}_limit')}"]}
            return {**seen, "checked": True} if name == "c" else seen

        return node

    g = StateGraph("review", reducers={"seen": operator.add, "notes": operator.add})
    g.add_node("plan", lambda s: None)
    for name in ("b", "c", "d"):
        g.add_node(name, branch(name))
        g.add_edge("plan", name)
    g.add_node("report", lambda s: {"count": len(s["seen"])})
    g.set_entry_point("plan").add_edge(["b", "c", "d"], "report")
    return g.add_interrupt_before("b", "d").compile(store)


START = {"amount": 100, "seen": [], "notes": []}


def test_an_edit_of_one_held_task_is_its_input_and_part_of_the_resumed_superstep(
    drive: Driver, store: Checkpointer
) -> None:
    run = review(store).start(START)
    drive.run(run)
    shown = {t.task_id: t.digest for t in run.pending()}
    decision = run.approve(by="ada", task="b", update={"amount": 50, "notes": ["capped"]})
    assert decision.edit is not None
    assert decision.edit["update"] == {"amount": 50, "notes": ["capped"]}
    assert decision.digest_shown == shown["b"]
    assert decision.edit["approved_digest"] not in (None, shown["b"])
    assert run.state["amount"] == 100  # the checkpoint is the state every approver was shown
    run.approve(by="bob", task="d")  # d as it was shown
    drive.run(run)
    assert run.status == Status.COMPLETED
    # b ran on its edit; c (ran before the pause) and d on the state shown
    assert run.state["seen"] == ["b:50:None", "c:100:None", "d:100:None"]
    assert run.state["amount"] == 50  # the edit is in the superstep's result...
    assert run.state["notes"] == ["capped"]  # ...through the reducers
    assert run.state["count"] == 3
    [audited] = [d for d in run.decisions() if d.node == "b"]
    assert audited.edit == decision.edit
    approved = [e for e in run.events if e.type == EventType.APPROVED]
    assert [(e.payload["task"], e.payload.get("update")) for e in approved] == [
        ("b", {"amount": 50, "notes": ["capped"]}),
        ("d", None),
    ]


def test_edits_of_two_held_tasks_each_reach_their_own_task_and_both_merge(
    drive: Driver, store: Checkpointer
) -> None:
    run = review(store).start(START)
    drive.run(run)
    if drive.mode == "sync":
        run.approve(by="ada", task="d", update={"d_limit": 7, "notes": ["d"]})
    else:  # the async twin takes the same edit
        asyncio.run(run.aapprove(by="ada", task="d", update={"d_limit": 7, "notes": ["d"]}))
    run.approve(by="bob", task="b", update={"b_limit": 3, "notes": ["b"]})
    drive.run(run)
    assert run.state["seen"] == ["b:100:3", "c:100:None", "d:100:7"]
    assert (run.state["b_limit"], run.state["d_limit"]) == (3, 7)
    assert run.state["notes"] == ["b", "d"]  # plan order, whatever order they were approved


def test_an_edit_replacing_a_key_another_task_writes_is_refused_and_nothing_is_decided(
    store: Checkpointer,
) -> None:
    run = review(store).start(START)
    run.run()
    with pytest.raises(ConflictingEdit) as caught:  # c wrote "checked" before the pause...
        run.approve(by="ada", task="b", update={"checked": False})
    assert (caught.value.key, caught.value.task) == ("checked", "b")
    assert caught.value.other == "task 'c' (finished before the pause)"
    assert run.decisions() == []  # refused before anything was stored
    run.approve(by="ada", task="b", update={"limit": 1})
    with pytest.raises(ConflictingEdit) as clash:  # ...and b's edit replaces "limit"
        run.approve(by="bob", task="d", update={"limit": 2})
    assert (clash.value.key, clash.value.other) == ("limit", "task 'b''s edit")
    assert [t.task_id for t in run.pending()] == ["d"]
    refused = [d for d in run.decisions() if not d.accepted]
    assert [(d.node, d.reason) for d in refused] == [("d", "conflicting edit: 'limit'")]
    run.approve(by="bob", task="d", update={"notes": ["fine: notes has a reducer"]})
    run.run()
    assert (run.status, run.state["limit"]) == (Status.COMPLETED, 1)


def test_a_held_tasks_own_result_may_replace_its_edit_but_another_tasks_may_not(
    store: Checkpointer,
) -> None:
    g = StateGraph("clash")
    g.add_node("plan", lambda s: None)
    g.add_node("b", lambda s: {"amount": s["amount"] + 1})
    g.add_node("d", lambda s: {"total": s["amount"]})
    g.set_entry_point("plan").add_edge("plan", "b").add_edge("plan", "d")
    wf = g.add_interrupt_before("b", "d").compile(store)
    run = wf.start({"amount": 1})
    run.run()
    run.approve(by="ada", task="b", update={"amount": 10})
    run.approve(by="ada", task="d")
    run.run()
    assert run.state == {"amount": 11, "total": 1}  # b refined its input, as after any edit
    other = wf.start({"amount": 1})
    other.run()
    other.approve(by="ada", task="d", update={"amount": 10})
    other.approve(by="ada", task="b")
    with pytest.raises(ConflictingUpdate, match="'amount'"):  # b's result vs d's edit
        other.run()


def test_an_edit_of_a_held_send_edits_its_payload_and_the_other_sends_keep_theirs(
    drive: Driver, store: Checkpointer
) -> None:
    from agentnb import Send

    g = StateGraph("map", reducers={"summaries": operator.add})
    g.add_node("split", lambda s: None)
    g.add_node("summarise", lambda s: {"summaries": [s["doc"].upper()]})
    g.set_entry_point("split").add_conditional_edges(
        "split", lambda s: [Send("summarise", {"doc": d}) for d in s["docs"]], ["summarise"]
    )
    wf = g.add_interrupt_before("summarise").compile(store)
    run = wf.start({"docs": ["a", "b", "c"], "summaries": []})
    drive.run(run)
    assert [t.task_id for t in run.pending()] == ["summarise[0]", "summarise[1]", "summarise[2]"]
    # every reviewer edits "doc", a key without a reducer: each edits its own task's payload
    run.approve(by="ada", task="summarise[0]", update={"doc": "first"})
    run.approve(by="bob", task="summarise[2]", update={"doc": "third", "summaries": ["note"]})
    run.approve(by="cy", task="summarise[1]")
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert run.state["summaries"] == ["note", "FIRST", "B", "THIRD"]  # edits, then results
    assert "doc" not in run.state  # a payload's key stays the task's own


def test_resume_decides_one_held_task_with_edits_and_continues_once_all_are_decided(
    store: Checkpointer,
) -> None:
    wf = review(store)
    run = wf.start(START).run()
    first = list(wf.resume(run.run_id, "approved", by="ada", task="b", update={"amount": 1}))
    assert [e.type for e in first] == [EventType.APPROVED]  # d still waits: nothing runs
    rest = list(wf.resume(run.run_id, "approved", by="bob", task="d"))
    assert rest[-1].type == EventType.COMPLETED
    assert wf.attach(run.run_id).state["seen"] == ["b:1:None", "c:100:None", "d:100:None"]


def test_an_edit_of_held_tasks_needs_a_task_and_json(store: Checkpointer) -> None:
    run = review(store).start(START)
    run.run()
    with pytest.raises(TaskNotNamed):
        run.approve(by="ada", update={"amount": 1})
    with pytest.raises(InvalidDecision, match="update"):
        run.approve(by="ada", task="b", update={"amount": {1}})
    assert len(run.pending()) == 2
    assert run.decisions() == []


def test_the_cli_approves_a_held_task_with_edits_merged_by_the_workflows_reducers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.sqlite3")
    with SqliteCheckpointer(path) as store:
        run_id = review(store).start(START).run().run_id
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    argv = ["approve", run_id, "--db", path, "--as", "ada", "--task", "b"]
    edit = ["--update", '{"amount": 5, "notes": ["cli"]}']
    assert main([*argv, *edit], out=out) == 2  # an edit needs the reducers
    assert "--workflow MODULE:ATTR" in capsys.readouterr().err
    workflow = ["--workflow", "tests.graph.test_task_edits:review"]
    assert main([*argv, *edit, *workflow], out=out) == 0, capsys.readouterr().err
    shown = io.StringIO()
    assert main(["show", run_id, "--db", path], out=shown) == 0
    listing = shown.getvalue()
    assert (
        'held     task \'b\' (b): approved by ada, edit {"amount": 5, "notes": ["cli"]}\n'
        in listing
    )
    assert "held     task 'd' (d): pending  digest " in listing
    assert main(["approve", run_id, "--db", path, "--as", "bob", "--task", "d"], out=out) == 0
    with SqliteCheckpointer(path) as store:
        run = review(store).attach(run_id).run()
        assert run.state["seen"] == ["b:5:None", "c:100:None", "d:100:None"]
        assert (run.state["amount"], run.state["notes"]) == (5, ["cli"])
        assert store.decisions(run_id)[0].edit is not None


def gate(store: Checkpointer | None = None) -> Workflow:
    """plan -> pay, paused before pay (one boundary, no held tasks)."""
    g = StateGraph("gate", reducers={"notes": operator.add})
    g.add_node("plan", lambda s: {"amount": 900}).add_node("pay", lambda s: {"paid": s["amount"]})
    g.set_entry_point("plan").add_edge("plan", "pay").add_interrupt_before("pay")
    return g.compile(store)


def test_the_cli_approves_one_pause_with_edits_as_the_pending_steps_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.sqlite3")
    with SqliteCheckpointer(path) as store:
        run_id = gate(store).start({"notes": []}).run().run_id
    monkeypatch.chdir(ROOT)
    argv = ["approve", run_id, "--db", path, "--as", "ada", "--update"]
    edit = '{"amount": 300, "notes": ["capped"]}'
    workflow = ["--workflow", "tests.graph.test_task_edits:gate"]
    assert main([*argv, "{not json", *workflow], out=io.StringIO()) == 2
    assert "--update is not JSON" in capsys.readouterr().err
    assert main([*argv, edit, *workflow], out=io.StringIO()) == 0, capsys.readouterr().err
    with SqliteCheckpointer(path) as store:
        run = gate(store).attach(run_id)
        assert run.state["amount"] == 300  # the edit is the pending step's checkpoint
        run.run()
        assert run.state == {"amount": 300, "notes": ["capped"], "paid": 300}
        [decision] = store.decisions(run_id)
        assert decision.edit is not None
        assert decision.edit["update"] == {"amount": 300, "notes": ["capped"]}


@pytest.mark.slow
def test_two_processes_deciding_different_held_tasks_both_succeed_each_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "race.sqlite3"
    with SqliteCheckpointer(path) as store:
        wf = review(store)
        run_ids = [wf.start(START).run().run_id for _ in range(8)]
    go = tmp_path / "go"
    worker = Path(__file__).with_name("task_edit_worker.py")
    procs = [
        python(worker, str(path), str(go), task)
        for task in ("b", "d", "b", "d")  # two deciders per task, racing too
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.touch()
    won: dict[str, list[str]] = {"b": [], "d": []}
    for task, proc in zip(("b", "d", "b", "d"), procs, strict=True):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        won[task] += json.loads(out)
    assert sorted(won["b"]) == sorted(won["d"]) == sorted(run_ids)  # each task exactly once
    with SqliteCheckpointer(path) as store:
        wf = review(store)
        for run_id in run_ids:
            assert store.get_run(run_id).status == Status.APPROVED
            accepted = [d for d in store.decisions(run_id) if d.accepted]
            assert sorted(d.node or "" for d in accepted) == ["b", "d"]
            run = wf.attach(run_id).run()
            assert run.state["seen"] == ["b:100:10", "c:100:None", "d:100:10"]
            assert sorted(run.state["notes"]) == ["b checked", "d checked"]


@pytest.mark.slow
def test_an_edit_is_kept_when_the_resumed_superstep_is_killed_after_the_edited_task(
    tmp_path: Path,
) -> None:
    import signal
    import sqlite3

    worker = Path(__file__).with_name("task_edit_crash_worker.py")
    db, ledger = str(tmp_path / "runs.sqlite3"), str(tmp_path / "ledger.sqlite3")

    def spawn(command: str) -> subprocess.Popen[str]:
        return python(worker, db, ledger, command)

    first = spawn("start")
    assert first.stdout is not None
    line = first.stdout.readline().strip()  # blocks until b's (edited) result is durable
    assert line == "saved b", first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    second = spawn("resume")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    final = json.loads(out.strip().splitlines()[-1])
    assert final["status"] == "completed"
    assert final["state"]["seen"] == ["b:5", "d:100"]  # b ran on its edit, d on the state shown
    assert (final["state"]["amount"], final["state"]["notes"]) == (5, ["edited"])  # merged once
    calls = dict(sqlite3.connect(ledger).execute("SELECT node, count(*) FROM calls GROUP BY node"))
    assert calls == {"b": 1, "d": 2}  # b never ran again; d, killed mid-call, ran again
