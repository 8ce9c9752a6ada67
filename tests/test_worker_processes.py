"""``agentnb worker`` as real processes on one SQLite file: races, SIGKILL, SIGTERM, a CLI decision.

Every node appends ``RUN_ID PID`` to an execution log (each execution, so a run executed
twice shows twice) and pays through ``ctx.once`` (the effect ledger); see worker_flows.py.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer, Status
from agentnb.store.records import RunRecord

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import worker_flows  # noqa: E402

ROOT = HERE.parent
pytestmark = pytest.mark.slow
AS_ALICE = ("--as", "alice")


def env(tmp: Path, **extra: str) -> dict[str, str]:
    base = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    base["AGENTNB_EXEC_LOG"] = str(tmp / "executed.log")
    return {**base, **extra}


def worker(tmp: Path, flow: str, *args: str, **extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "agentnb", "worker", "--db", str(tmp / "runs.sqlite3")]
    return subprocess.Popen(
        [*command, "--workflow", f"worker_flows:{flow}", *args],
        env=env(tmp, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return out


def until(condition: Callable[[], bool], timeout: float = 60) -> None:
    """Wait for ``condition`` with a deadline (polling the database, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def executions(tmp: Path) -> collections.Counter[str]:
    log = tmp / "executed.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return collections.Counter(line.split()[0] for line in lines)


def statuses(store: SqliteCheckpointer) -> collections.Counter[Status]:
    return collections.Counter(r.status for r in store.list_runs())


def test_eight_workers_on_2000_queued_runs_execute_each_run_exactly_once(
    tmp_path: Path,
) -> None:
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        wf = worker_flows.patient(store)
        ids = {wf.submit({"i": i}).run_id for i in range(2000)}
        procs = [worker(tmp_path, "patient", "--until-idle") for _ in range(8)]
        for proc in procs:
            finished(proc)
        assert statuses(store) == {Status.COMPLETED: 2000}
        ran = executions(tmp_path)
        assert set(ran) == ids
        assert set(ran.values()) == {1}  # no run's node executed twice
        effects = [e for run_id in ids for e in store.effects(run_id)]
        assert len(effects) == 2000  # one payment per run in the ledger
        pids = {line.split()[1] for line in (tmp_path / "executed.log").read_text().splitlines()}
        assert len(pids) > 1  # the work was shared


def test_a_sigkilled_workers_run_is_taken_over_after_its_lease_expires_without_a_second_effect(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "in-flight"
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        run = worker_flows.counted(store).submit({})
        doomed = worker(tmp_path, "counted", AGENTNB_HANG="1", AGENTNB_MARKER=str(marker))
        until(marker.exists)  # paid, and hanging inside the step
        held = store.get_run(run.run_id)
        assert held.lease_owner is not None
        doomed.send_signal(signal.SIGKILL)
        doomed.communicate(timeout=30)
        heir = worker(tmp_path, "counted")  # polls until the lease has run out
        until(lambda: store.get_run(run.run_id).status == Status.COMPLETED)
        heir.send_signal(signal.SIGTERM)
        assert "1 completed" in finished(heir, timeout=60)
        final: RunRecord = store.get_run(run.run_id)
        assert final.status == Status.COMPLETED
        assert final.fence > held.fence  # the heir claimed it under a new fence
        assert executions(tmp_path)[run.run_id] == 2  # the node ran again in the heir...
        [paid] = store.effects(run.run_id)  # ...but paid once: the ledger's result came back
        assert store.checkpoint(run.run_id).state["receipt"] == paid.result
        assert paid.result.endswith(f"by {doomed.pid}")
        # Taken over only once the dead worker's lease had run out.
        claimed_at = next(e.at for e in store.events(run.run_id) if e.type == "state_update")
        assert claimed_at >= (held.lease_expires or 0)


def test_sigterm_finishes_the_step_in_flight_gives_the_run_back_and_exits_0(
    tmp_path: Path,
) -> None:
    marker, release = tmp_path / "in-flight", tmp_path / "release"
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        run = worker_flows.counted(store).submit({})
        proc = worker(tmp_path, "counted", AGENTNB_MARKER=str(marker), AGENTNB_RELEASE=str(release))
        until(marker.exists)
        proc.send_signal(signal.SIGTERM)
        assert proc.stderr is not None
        for line in proc.stderr:  # the worker says it is stopping (EOF would fail below)
            if "stopping" in line:
                break
        # The node holds its step until released: the signal did not cut it off.
        assert proc.poll() is None
        release.write_text("go")
        out = finished(proc, timeout=60)
        assert "1 requeued" in out
        record = store.get_run(run.run_id)
        assert (record.status, record.step, record.node) == (Status.QUEUED, 1, "done")
        assert record.lease_owner is None
        assert [e.type for e in store.events(run.run_id)][-1] == "state_update"
        # Any worker continues it from there; the paid step does not run again.
        finished(worker(tmp_path, "counted", "--until-idle"))
        assert store.get_run(run.run_id).status == Status.COMPLETED
        assert executions(tmp_path)[run.run_id] == 1
        assert len(store.effects(run.run_id)) == 1


def test_a_run_approved_from_the_cli_is_continued_by_whichever_worker_claims_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(db) as store:
        wf = worker_flows.approval(store)
        ids = [wf.submit({}).run_id for _ in range(4)]
        procs = [worker(tmp_path, "approval") for _ in range(2)]
        until(lambda: statuses(store) == {Status.PENDING: 4})
        assert executions(tmp_path) == {}  # nothing paid before the approval
        for run_id in ids:
            cli = subprocess.run(
                [sys.executable, "-m", "agentnb", "approve", run_id, "--db", str(db), *AS_ALICE],
                env=env(tmp_path),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert cli.returncode == 0, cli.stderr
        until(lambda: statuses(store) == {Status.COMPLETED: 4})
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        outs = [finished(proc, timeout=60) for proc in procs]
        assert executions(tmp_path) == dict.fromkeys(ids, 1)
        for run_id in ids:
            [decision] = store.decisions(run_id)
            assert (decision.approver, decision.accepted) == ("alice", True)
            assert len(store.effects(run_id)) == 1
        completed = sum(int(out.split(" completed")[0].rsplit(" ", 1)[1]) for out in outs)
        assert completed == 4


def test_a_worker_process_fails_a_run_whose_node_returns_a_poison_value_once_and_exits(
    tmp_path: Path,
) -> None:
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        wf = worker_flows.poisoned(store)
        bad, good = wf.submit({"bad": True}), wf.submit({"bad": False})
        out = finished(worker(tmp_path, "poisoned", "--until-idle"), timeout=120)
        assert executions(tmp_path) == {bad.run_id: 1, good.run_id: 1}
        assert "2 claimed, 1 completed, 0 paused, 1 failed, 0 requeued" in out
        failed = store.get_run(bad.run_id)
        assert (failed.status, failed.node, failed.lease_owner) == (Status.FAILED, "poison", None)
        assert failed.error is not None
        assert "delta of 'poison'['x']" in failed.error["message"]
        assert store.get_run(good.run_id).status == Status.COMPLETED
