"""``agentnb respond``: a node's question answered from the command line — checked against
its schema, decided exactly once across processes, audited with the identity; and
``agentnb show`` lists the questions a run waits on."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agentnb import NodeContext, SqliteCheckpointer, StateGraph, Status, Workflow
from agentnb.cli import main
from tests.processes import python

SEATS = {"question": "How many seats?", "schema": {"type": "integer", "minimum": 1}}


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def quote(store: SqliteCheckpointer, calls: Counter[str] | None = None) -> Workflow:
    seen = calls if calls is not None else Counter()

    def node(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        seen["quote"] += 1
        price = ctx.once("price", lambda: seen.update(["price"]) or 120)
        return {"total": price * ctx.interrupt(SEATS)}

    g = StateGraph("quote").add_node("quote", node).set_entry_point("quote")
    return g.compile(store)


@pytest.fixture
def asked(tmp_path: Path) -> tuple[str, str]:
    """A database holding one run paused at a question."""
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = quote(store).start({}).run()
    return str(path), run.run_id


def test_respond_records_the_answer_and_the_run_continues_with_it(
    asked: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = asked
    code, out = cli("respond", run_id, "--db", path, "--value", "3", "--by", "ada")
    assert code == 0, capsys.readouterr().err
    assert f"answered run {run_id} at 'quote'" in out
    assert "with 3 as ada (identity " in out
    calls: Counter[str] = Counter()
    with SqliteCheckpointer(path) as store:
        run = quote(store, calls).attach(run_id)
        assert run.status == Status.APPROVED
        run.run()
        assert (run.status, run.state) == (Status.COMPLETED, {"total": 360})
        [decision] = store.decisions(run_id)
        assert (decision.approver, decision.accepted, decision.edit) == ("ada", True, {"answer": 3})
        assert decision.identity is not None
        assert decision.identity.name
    assert calls == {"quote": 1}  # resumed from its start; the price was recorded before


def test_an_answer_that_breaks_the_schema_is_refused_and_the_run_stays_paused(
    asked: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = asked
    code, _ = cli("respond", run_id, "--db", path, "--value", "0", "--as", "ada")
    assert code == 1
    err = capsys.readouterr().err
    assert "does not fit the question" in err  # InvalidAnswer
    assert "$.answer must be at least 1, not 0" in err
    assert "Traceback" not in err
    code, _ = cli("respond", run_id, "--db", path, "--value", "seven", "--as", "ada")
    assert code == 2
    assert "--value is not JSON" in capsys.readouterr().err
    with SqliteCheckpointer(path) as store:
        assert store.get_run(run_id).status == Status.PENDING
        assert store.effects(run_id)[-1].name == "price"  # no answer in the ledger
    assert cli("respond", run_id, "--db", path, "--value", "2", "--as", "ada")[0] == 0


def test_a_second_answer_is_refused_and_audited(
    asked: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, run_id = asked
    assert cli("respond", run_id, "--db", path, "--value", "3", "--as", "ada")[0] == 0
    assert cli("respond", run_id, "--db", path, "--value", "4", "--as", "bob")[0] == 1
    assert "is not pending approval" in capsys.readouterr().err  # ApprovalNotPending
    with SqliteCheckpointer(path) as store:
        audit = [(d.approver, d.accepted, d.edit) for d in store.decisions(run_id)]
    assert audit == [("ada", True, {"answer": 3}), ("bob", False, None)]


def test_respond_to_a_run_that_waits_for_an_approval_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path) as store:
        g = StateGraph("gate").add_node("pay", lambda s: None).set_entry_point("pay")
        run = g.add_interrupt_before("pay").compile(store).start({}).run()
    code, _ = cli("respond", run.run_id, "--db", str(path), "--value", "1", "--as", "ada")
    assert code == 1
    assert "waits for an approval of node 'pay', not for an answer" in capsys.readouterr().err
    with SqliteCheckpointer(path) as store:
        assert store.get_run(run.run_id).status == Status.PENDING


def test_show_lists_the_pending_question_with_its_schema(asked: tuple[str, str]) -> None:
    path, run_id = asked
    code, out = cli("show", run_id, "--db", path)
    assert code == 0
    assert "status   pending: waiting for an answer (agentnb respond;" in out
    assert "question task 'quote': How many seats?" in out
    assert '  schema {"type": "integer", "minimum": 1}' in out
    assert f"agentnb respond {run_id} --db {path} --value JSON --as NAME\n" in out
    data = json.loads(cli("show", run_id, "--db", path, "--json")[1])
    [question] = data["questions"]
    assert question["question"] == "How many seats?"
    assert question["schema"] == SEATS["schema"]
    assert question["task"] == "quote"
    cli("respond", run_id, "--db", path, "--value", "1", "--as", "ada")
    assert json.loads(cli("show", run_id, "--db", path, "--json")[1])["questions"] == []


def branches(store: SqliteCheckpointer) -> Workflow:
    def ask(name: str) -> Any:
        def node(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
            return {name: ctx.interrupt({"question": f"{name}?", "schema": {"type": "string"}})}

        return node

    g = StateGraph("two-questions").add_node("start", lambda s: None)
    g.add_node("left", ask("left")).add_node("right", ask("right")).set_entry_point("start")
    return g.add_edge("start", "left").add_edge("start", "right").compile(store)


def test_two_questions_in_one_superstep_are_answered_by_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.sqlite3")
    with SqliteCheckpointer(path) as store:
        run_id = branches(store).start({}).run().run_id
    out = cli("show", run_id, "--db", path)[1]
    assert "question task 'left': left?" in out
    assert "question task 'right': right?" in out
    assert "--as NAME --task right\n" in out
    code, _ = cli("respond", run_id, "--db", path, "--value", '"L"', "--as", "ada")
    assert code == 1
    assert "has 2 tasks awaiting approval ('left', 'right')" in capsys.readouterr().err
    for task, value in (("right", '"R"'), ("left", '"L"')):
        code, _ = cli(
            "respond", run_id, "--db", path, "--value", value, "--as", "ada", "--task", task
        )
        assert code == 0, capsys.readouterr().err
    with SqliteCheckpointer(path) as store:
        run = branches(store).attach(run_id).run()
        assert (run.status, run.state) == (Status.COMPLETED, {"left": "L", "right": "R"})


def test_a_question_inside_a_subgraph_is_answered_from_the_parent_run(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.sqlite3")

    def nested(store: SqliteCheckpointer) -> Workflow:
        def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
            return {"depth": ctx.interrupt({"question": "Depth?", "schema": {"type": "integer"}})}

        inner = StateGraph("inner").add_node("ask", ask).set_entry_point("ask")
        middle = StateGraph("middle").add_node("inner", inner).set_entry_point("inner")
        return (
            StateGraph("outer").add_node("middle", middle).set_entry_point("middle").compile(store)
        )

    with SqliteCheckpointer(path) as store:
        run_id = nested(store).start({}).run().run_id
    out = cli("show", run_id, "--db", path)[1]
    subgraphs = [line for line in out.splitlines() if line.startswith("subgraph ")]
    assert subgraphs == [  # its own children only; theirs are listed under them
        f"subgraph {run_id}/middle@0 (middle): pending: waiting for a decision before 'inner'"
    ]
    assert f"question task 'middle' (in subgraph run {run_id}/middle@0/inner@0): Depth?" in out
    data = json.loads(cli("show", run_id, "--db", path, "--json")[1])
    assert [c["run_id"] for c in data["children"]] == [f"{run_id}/middle@0"]
    assert cli("respond", run_id, "--db", path, "--value", "2", "--as", "ada")[0] == 0
    with SqliteCheckpointer(path) as store:
        run = nested(store).attach(run_id).run()
        assert (run.status, run.state) == (Status.COMPLETED, {"depth": 2})


def test_respond_without_a_task_answers_the_one_question_beside_held_approvals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "runs.sqlite3")

    def mixed(store: SqliteCheckpointer) -> Workflow:
        def ask(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
            return {"name": ctx.interrupt({"question": "Name?", "schema": {"type": "string"}})}

        g = StateGraph("mixed").add_node("start", lambda s: None).add_node("ask", ask)
        g.add_node("pay", lambda s: {"paid": True}).set_entry_point("start")
        g.add_edge("start", "ask").add_edge("start", "pay").add_interrupt_before("pay")
        return g.compile(store)

    with SqliteCheckpointer(path) as store:
        run = mixed(store).start({}).run()
        assert sorted(t.task_id for t in run.pending()) == ["ask", "pay"]
    assert cli("respond", run.run_id, "--db", path, "--value", '"Ada"', "--as", "ada")[0] == 0
    code, _ = cli(
        "respond", run.run_id, "--db", path, "--value", "1", "--as", "ada", "--task", "pay"
    )
    assert code == 1
    assert "waits for an approval of task 'pay', not for an answer" in capsys.readouterr().err
    assert cli("approve", run.run_id, "--db", path, "--as", "bob", "--task", "pay")[0] == 0
    with SqliteCheckpointer(path) as store:
        done = mixed(store).attach(run.run_id).run()
        assert (done.status, done.state) == (Status.COMPLETED, {"name": "Ada", "paid": True})


@pytest.mark.slow
def test_processes_racing_to_answer_one_question_record_exactly_one_answer(
    tmp_path: Path,
) -> None:
    path = tmp_path / "race.sqlite3"
    calls: Counter[str] = Counter()
    with SqliteCheckpointer(path) as store:
        run_ids = [quote(store, calls).start({}).run().run_id for _ in range(6)]
    (tmp_path / "ids.json").write_text(json.dumps(run_ids))
    go = tmp_path / "go"
    worker = Path(__file__).with_name("respond_worker.py")
    procs = [
        python(worker, str(path), str(go), str(me), str(tmp_path / "ids.json"))
        for me in range(1, 5)
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.touch()
    outcomes: dict[str, list[tuple[int, int, str]]] = {r: [] for r in run_ids}
    for me, proc in enumerate(procs, start=1):
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        for run_id, (code, message) in json.loads(out).items():
            outcomes[run_id].append((me, code, message))
    with SqliteCheckpointer(path) as store:
        for run_id, tries in outcomes.items():
            winners = [me for me, code, _ in tries if code == 0]
            assert len(winners) == 1, tries  # exactly one process answered
            for me, code, message in tries:
                if me != winners[0]:  # every other one was refused with a typed error
                    assert code == 1
                    assert "is not pending approval" in message, message  # ApprovalNotPending
            audit = store.decisions(run_id)
            assert [d.accepted for d in audit].count(True) == 1
            assert len(audit) == 4
            refused = {d.reason for d in audit if not d.accepted}
            assert refused == {"not pending: approved"}, refused
            accepted = next(d for d in audit if d.accepted)
            assert (accepted.approver, accepted.edit) == (
                f"worker-{winners[0]}",
                {"answer": winners[0]},
            )
            run = quote(store, calls).attach(run_id).run()
            assert run.state == {"total": 120 * winners[0]}
    assert calls["price"] == 6  # one price per run, however often its node ran
