"""Real processes on one PostgreSQL server: killed workers, a restarted server, a terminated
connection, and 16 processes deciding the same runs (workers: tests/store/pg_worker.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentnb import PostgresCheckpointer, Status
from agentnb.examples import build_refund_workflow
from agentnb.testing import ThrowawayPostgres
from tests.conftest import schema_dsn, throwaway_cluster
from tests.processes import SPAWNED

WORKER = Path(__file__).with_name("pg_worker.py")
ROOT = Path(__file__).parents[2]
STEPS = 6
NAMES = [f"n{i}" for i in range(STEPS)]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[ThrowawayPostgres]:
    """A cluster of this module's own: these tests restart it and cut its connections."""
    yield from throwaway_cluster({"fsync": "off"})


@pytest.fixture
def dsn(server: ThrowawayPostgres) -> str:
    return schema_dsn(server, "p")


def spawn(tmp: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AGENTNB_STEPS": str(STEPS),
        "AGENTNB_TRACE": str(tmp / "trace"),
        "AGENTNB_EFFECTS": str(tmp / "effects"),
        "AGENTNB_GO": str(tmp / "go"),
        **env,
    }
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    SPAWNED.append(proc)
    return proc


def wait_for_line(proc: subprocess.Popen[str], expected: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()  # blocks until the worker says it (or exits)
    if line != expected:
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"worker said {line!r}, not {expected!r}: {err}")


def finish(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def lines(path: Path) -> list[str]:
    return path.read_text().split()


def assert_ran_exactly_once(tmp: Path, dsn: str, result: dict[str, Any]) -> None:
    assert result["status"] == "completed"
    assert result["state"]["done"] == NAMES  # every node's result, once, in order
    assert Counter(lines(tmp / "effects")) == Counter(NAMES)  # no effect repeated
    with PostgresCheckpointer(dsn) as store:
        steps = [c.step for c in store.checkpoints("chain-run")]
        assert steps == list(range(STEPS + 1))
        events = store.events("chain-run")
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert len(store.effects("chain-run")) == STEPS


def backend_pids(server: ThrowawayPostgres) -> list[int]:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'agentnb%%' "
            "AND pid <> pg_backend_pid()"
        ).fetchall()
    return [pid for (pid,) in rows]


def test_a_killed_worker_is_taken_over_after_its_lease_expires_with_no_effect_repeated(
    tmp_path: Path, dsn: str
) -> None:
    first = spawn(tmp_path, "run", dsn, "chain-run", AGENTNB_HOLD_AT="n3", AGENTNB_LEASE="8")
    wait_for_line(first, "held")  # n3's effect is recorded; the node has not finished
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    with PostgresCheckpointer(dsn) as store:
        expires = store.get_run("chain-run").lease_expires
    assert expires is not None

    # The second worker claims another host, so it cannot see that the first one is dead:
    # it must wait for the lease to expire, then fence the first one out. Whether it meets
    # the live lease (busy) depends on how fast it starts on a loaded machine;
    # what must hold either way is that it ran nothing before the lease's end.
    (tmp_path / "go").touch()
    result = finish(spawn(tmp_path, "run", dsn, "chain-run", AGENTNB_HOST="another-machine"))
    assert_ran_exactly_once(tmp_path, dsn, result)
    with PostgresCheckpointer(dsn) as store:
        starts = [e for e in store.events("chain-run") if e.type == "node_start"]
    # n3's start in the killed worker was never committed: the one recorded is the second's.
    again = [e for e in starts if e.node == "n3"][-1]
    assert again.at >= expires, (again.at, expires, result["busy"])
    assert lines(tmp_path / "trace") == [*NAMES[:4], *NAMES[3:]]  # only n3 ran again


@pytest.mark.parametrize("cut", ["restart", "terminate"])
def test_a_restarted_server_or_a_terminated_connection_loses_no_step_and_repeats_none(
    tmp_path: Path, dsn: str, server: ThrowawayPostgres, cut: str
) -> None:
    worker = spawn(tmp_path, "run", dsn, "chain-run", AGENTNB_HOLD_AT="n2")
    wait_for_line(worker, "held")
    if cut == "restart":
        server.restart("fast")  # every connection is cut; the server comes back
    else:
        pids = backend_pids(server)
        assert pids
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            for pid in pids:
                conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    (tmp_path / "go").touch()
    result = finish(worker)
    assert result["reconnects"] >= 1
    assert_ran_exactly_once(tmp_path, dsn, result)
    assert lines(tmp_path / "trace") == NAMES  # no node ran twice


def test_sixteen_processes_deciding_the_same_hundred_runs_decide_each_exactly_once(
    tmp_path: Path, dsn: str
) -> None:
    with PostgresCheckpointer(dsn) as store:
        wf = build_refund_workflow(store)
        for _ in range(100):
            wf.start({"requested": 1000}).run()
        ids = [r.run_id for r in store.list_runs("pending")]
        assert len(ids) == 100
    (tmp_path / "ids.json").write_text(json.dumps(ids))
    go = tmp_path / "go"
    workers = [
        spawn(tmp_path, "race", dsn, str(go), str(i), str(tmp_path / "ids.json")) for i in range(16)
    ]
    for proc in workers:  # every process is connected: now they all start at once
        wait_for_line(proc, "ready")
    go.touch()
    results = [finish(proc) for proc in workers]
    assert sum(r["won"] for r in results) == 100
    assert sum(r["lost"] for r in results) == 16 * 100 - 100
    with PostgresCheckpointer(dsn) as store:
        assert len(store.list_runs(Status.APPROVED)) == 100
        audit = store.decisions()
        assert sum(d.accepted for d in audit) == 100
        assert len(audit) == 16 * 100  # every loser's attempt is audited as refused
        assert {d.run_id for d in audit if d.accepted} == set(ids)


def test_eight_workers_on_600_queued_runs_execute_each_run_exactly_once(
    tmp_path: Path, dsn: str
) -> None:
    from tests import worker_flows

    with PostgresCheckpointer(dsn) as store:
        # A lease no stall outlasts, as the SQLite race (tests/test_worker_processes.py):
        # with 1.5 s a worker stalled on loaded cores loses a run, which then runs twice.
        wf = worker_flows.patient(store)
        ids = {wf.submit({"i": i}).run_id for i in range(600)}
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
        "AGENTNB_EXEC_LOG": str(tmp_path / "executed.log"),
    }
    command = [sys.executable, "-m", "agentnb", "worker", "--db", dsn]
    procs = []
    for _ in range(8):
        proc = subprocess.Popen(
            [*command, "--workflow", "worker_flows:patient", "--until-idle"],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        SPAWNED.append(proc)
        procs.append(proc)
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    log = (tmp_path / "executed.log").read_text().splitlines()
    ran = Counter(line.split()[0] for line in log)
    assert set(ran) == ids
    assert set(ran.values()) == {1}  # no run's node executed twice
    assert len({line.split()[1] for line in log}) > 1  # the work was shared
    with PostgresCheckpointer(dsn) as store:
        assert Counter(r.status for r in store.list_runs()) == {Status.COMPLETED: 600}
        assert sum(len(store.effects(run_id)) for run_id in ids) == 600
