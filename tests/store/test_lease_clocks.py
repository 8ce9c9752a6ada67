"""Leases on the database's clock: processes whose clocks are an hour off (worker:
clock_worker.py, its ``time.time()`` moved by ``AGENTNB_SKEW``) on one SQLite file and on
one PostgreSQL server.

Whether a lease has expired is decided by the database's clock in each statement, so a
process whose clock runs ahead does not take over a run (or a machine's timers) another
process still holds, and one whose clock runs behind does not write a lease that has
already ended; a node runs once while its holder renews its lease.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentnb import Checkpointer, ManualClock, RunBusy, Status
from agentnb.cli._stores import open_store
from tests.processes import SPAWNED, python
from tests.store.clock_worker import lamp, slow

WORKER = Path(__file__).with_name("clock_worker.py")
HOUR = 3600.0
LEASE = 9.0
"""Renewed every 3 s: a holder has to stall 6 s to lose it, which a loaded machine does not
make it do; the contender needs no wait on it (its clock is an hour off)."""

pytestmark = pytest.mark.slow

SKEWS = {
    # (the holder's clock, the other process's clock), in seconds from the true time
    "the other runs an hour ahead": (0.0, HOUR),
    "the holder runs an hour behind": (-HOUR, 0.0),
}


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "runs.sqlite3")
    return str(request.getfixturevalue("pg_dsn"))


def spawn(tmp: Path, command: str, db: str, skew: float, **env: str) -> subprocess.Popen[str]:
    proc = python(
        WORKER,
        command,
        db,
        AGENTNB_SKEW=str(skew),
        AGENTNB_EXEC_LOG=str(tmp / "executed.log"),
        AGENTNB_LEASE=str(LEASE),
        **env,
    )
    SPAWNED.append(proc)
    return proc


def said(proc: subprocess.Popen[str], expected: str) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()  # blocks until the process says it (or exits)
    if line != expected:
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the process said {line!r}, not {expected!r}: {err}")


def result(proc: subprocess.Popen[str]) -> Any:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def executions(tmp: Path) -> collections.Counter[str]:
    log = tmp / "executed.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return collections.Counter(line.split()[0] for line in lines)


def lease_of(store: Checkpointer, run_id: str) -> float:
    return store.get_run(run_id).lease_expires or 0.0


def test_taking_checking_and_renewing_a_lease_read_the_databases_clock_not_the_callers(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = time.time
    holder, other = "a-host:1:holder", "b-host:2:other"  # other hosts: neither looks dead
    with open_store(db) as store:
        wf = slow(store, 30)
        graphs = {wf.name: wf.shape}
        run_id = wf.submit().run_id
        monkeypatch.setattr(time, "time", lambda: real() - HOUR)
        [claimed] = store.claim(holder, graphs, lease_seconds=30)
        assert real() + 20 < (claimed.lease_expires or 0) <= real() + 31
        store.release(run_id, claimed.fence)
        fence = store.acquire(run_id, holder, lease_seconds=30).fence
        assert real() + 20 < lease_of(store, run_id) <= real() + 31
        assert store.renew(holder, [run_id], lease_seconds=60) == [run_id]
        assert real() + 50 < lease_of(store, run_id) <= real() + 61

        monkeypatch.setattr(time, "time", lambda: real() + HOUR)
        with pytest.raises(RunBusy):
            store.acquire(run_id, other, lease_seconds=30)
        assert store.claim(other, graphs) == []
        assert store.renew(holder, [run_id], lease_seconds=30) == [run_id]
        assert real() + 20 < lease_of(store, run_id) <= real() + 31
        assert store.get_run(run_id).fence == fence


@pytest.mark.parametrize("skews", SKEWS.values(), ids=SKEWS.keys())
def test_a_run_its_holder_renews_is_never_taken_by_a_process_whose_clock_is_an_hour_off(
    tmp_path: Path, db: str, skews: tuple[float, float]
) -> None:
    holder_skew, other_skew = skews
    go = tmp_path / "go"
    with open_store(db) as store:
        run_id = slow(store, LEASE).submit().run_id
        holder = spawn(tmp_path, "work", db, holder_skew, AGENTNB_HOLD=str(go))
        said(holder, "held")  # the node is executing, on the holder's lease
        claimed = lease_of(store, run_id)
        until(lambda: lease_of(store, run_id) > claimed)  # and its heartbeat renewed it

        other = result(spawn(tmp_path, "work", db, other_skew))
        go.touch()
        held = result(holder)
        assert executions(tmp_path) == {run_id: 1}  # the node ran once
        assert other == {"claimed": 0, "completed": 0, "lost": 0}
        assert held == {"claimed": 1, "completed": 1, "lost": 0}
        assert store.get_run(run_id).status == Status.COMPLETED


def test_a_run_whose_holder_ran_an_hour_ahead_and_died_is_free_once_its_lease_ends(
    tmp_path: Path, db: str
) -> None:
    with open_store(db) as store:
        wf = slow(store, 2.0)
        run_id = wf.submit().run_id
        holder = spawn(tmp_path, "work", db, HOUR, AGENTNB_HOLD=str(tmp_path / "go"))
        said(holder, "held")
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
        # The claim does not ask whether the holder lives (it might be on another
        # machine): its lease must end 2 s after it was last renewed, by the database's
        # clock, not an hour later.
        taken: list[str] = []
        graphs = {wf.name: wf.shape}
        until(lambda: bool(taken.extend(r.run_id for r in store.claim("heir", graphs)) or taken))
        assert taken == [run_id]


@pytest.mark.parametrize("skews", SKEWS.values(), ids=SKEWS.keys())
def test_a_machines_timer_lease_is_never_taken_by_a_process_whose_clock_is_an_hour_off(
    tmp_path: Path, db: str, skews: tuple[float, float]
) -> None:
    holder_skew, other_skew = skews
    go = tmp_path / "go"
    with open_store(db) as store:
        lamp().start("desk", store=store, clock=ManualClock(0))  # due since 1970
        holder = spawn(tmp_path, "lease", db, holder_skew, AGENTNB_HOLD=str(go))
        said(holder, "held")
        other = result(spawn(tmp_path, "lease", db, other_skew))
        go.touch()
        assert result(holder) == ["desk"]
        assert other == []


@pytest.mark.parametrize(
    ("skew", "scheduled", "fired"),
    [
        (HOUR, 0.0, 0),  # due in a minute: an hour ahead, the worker's clock says it is due
        (-HOUR, -120.0, 1),  # due a minute ago: an hour behind, its clock says it is not
    ],
    ids=["an hour ahead, not yet due", "an hour behind, due"],
)
def test_a_worker_whose_clock_is_an_hour_off_fires_timers_when_the_database_says_so(
    tmp_path: Path, db: str, skew: float, scheduled: float, fired: int
) -> None:
    with open_store(db) as store:
        # The timer is set for 60 s after `scheduled` seconds from now (the true time).
        lamp().start("desk", store=store, clock=ManualClock(time.time() + scheduled))
        assert result(spawn(tmp_path, "fire", db, skew)) == {"timers": fired}
        assert lamp().resume("desk", store=store).state == ("off" if fired else "on")
