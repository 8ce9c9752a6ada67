"""SQLite-specific behaviour: pragmas, migrations, and several processes on one file."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentnb import SqliteCheckpointer, Status
from agentnb.errors import SchemaVersionError, StoreError, StoreFileError
from agentnb.examples import build_refund_workflow
from agentnb.store import sqlite as sqlite_store
from agentnb.store.migrate import LATEST, migrate

WORKER = Path(__file__).with_name("worker.py")
ROOT = Path(__file__).parents[2]


def spawn(*args: str, trace: Path, block: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "AGENTNB_TRACE": str(trace), "PYTHONPATH": str(ROOT)}
    env.pop("AGENTNB_BLOCK", None)
    if block:
        env["AGENTNB_BLOCK"] = "1"
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_database_uses_wal_a_busy_timeout_and_a_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    with SqliteCheckpointer(path, timeout=7):
        pass
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("SELECT max(version) FROM schema_version").fetchone()[0] == LATEST >= 4
    store = SqliteCheckpointer(path, timeout=7, synchronous="full")
    assert store._db.execute("PRAGMA busy_timeout").fetchone()[0] == 7000
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    store.close()


def test_reopening_keeps_runs_and_applies_no_migration_twice(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    with SqliteCheckpointer(path) as store:
        build_refund_workflow(store).start({})
    with SqliteCheckpointer(path) as store:
        assert len(store.list_runs()) == 1
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM schema_version").fetchone()[0] == LATEST


def test_a_database_from_a_newer_agentnb_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite3"
    SqliteCheckpointer(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_version VALUES (99, 0)")
    db.execute("PRAGMA user_version=99")  # as a newer agentnb stamps its files
    db.commit()
    db.close()
    with pytest.raises(SchemaVersionError, match="schema version 99") as err:
        SqliteCheckpointer(path)
    assert (err.value.found, err.value.supported) == (99, LATEST)


def test_an_older_database_is_migrated_on_open(tmp_path: Path) -> None:
    """A version-1 file (no ledger, no machines) gains the new tables and keeps its runs."""
    path = tmp_path / "old.sqlite3"
    with SqliteCheckpointer(path) as store:
        build_refund_workflow(store).start({})
    db = sqlite3.connect(path)
    db.execute("DROP TABLE effects")
    db.execute("DROP TABLE machine_timers")
    db.execute("DROP TABLE machine_events")
    db.execute("DROP TABLE machine_instances")
    db.execute("DROP TABLE pending_writes")
    db.execute("DROP TABLE pending_tasks")  # with 0010's edit column
    db.execute("DROP TABLE decision_edits")
    db.execute("ALTER TABLE entries DROP COLUMN tasks")
    db.execute("DROP INDEX entries_anchors")
    db.execute("ALTER TABLE entries DROP COLUMN kind")
    db.execute("DROP TABLE run_policies")
    db.execute("ALTER TABLE decisions DROP COLUMN identity")
    db.execute("DELETE FROM schema_version WHERE version >= 2")
    db.execute("PRAGMA user_version=0")  # as an older agentnb left its files
    db.commit()
    db.close()
    with SqliteCheckpointer(path) as store:
        assert len(store.list_runs()) == 1
        assert store.recorded_effect("nothing") is None
    versions = sqlite3.connect(path).execute("SELECT version FROM schema_version").fetchall()
    assert versions == [(v,) for v in range(1, LATEST + 1)]


def test_a_file_migrated_before_the_stamp_is_stamped_on_open_and_read_only_it_still_opens(
    tmp_path: Path,
) -> None:
    path = tmp_path / "unstamped.sqlite3"
    with SqliteCheckpointer(path) as store:
        run_id = build_refund_workflow(store).start({}).run_id
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=0")  # what every file agentnb made before the stamp has
    db.close()
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    migrate(read_only, str(path))  # it may not stamp the file: it is checked, not refused
    assert read_only.execute("PRAGMA user_version").fetchone()[0] == 0
    read_only.close()
    with SqliteCheckpointer(path) as store:
        assert [r.run_id for r in store.list_runs()] == [run_id]
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == LATEST


def traced_statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every SQL statement the SQLite store's connections opened from now on run, in order."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db = connect(*args, **kwargs)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite_store.sqlite3, "connect", traced)
    return statements


def test_opening_a_current_file_reads_its_stamp_and_sets_the_connection_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "current.sqlite3"
    SqliteCheckpointer(path).close()
    statements = traced_statements(monkeypatch)
    SqliteCheckpointer(path, synchronous="FULL").close()
    assert statements == [
        "PRAGMA user_version",
        "PRAGMA synchronous=FULL",
        f"PRAGMA journal_size_limit={sqlite_store.WAL_LIMIT}",
        f"PRAGMA cache_size=-{sqlite_store.CACHE_KIB}",
    ]


def test_an_approval_cycle_reads_its_checkpoint_only_on_attach_and_writes_each_step_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start, pause, reopen, approve, finish: nothing the cycle wrote is read back but the
    state a new handle needs, and the step after the approval is not tried twice."""
    path = tmp_path / "cycle.sqlite3"
    SqliteCheckpointer(path).close()
    statements = traced_statements(monkeypatch)
    refunds: list[int] = []
    with SqliteCheckpointer(path) as store:
        run = build_refund_workflow(store, refunds).start({"requested": 1000})
        run.run()
        assert not [s for s in statements if "kind IS NOT NULL" in s]  # no checkpoint read
    with SqliteCheckpointer(path) as store:
        again = build_refund_workflow(store, refunds).attach(run.run_id)
        reads = len([s for s in statements if "kind IS NOT NULL" in s])
        again.approve(by="ada")
        again.run()
        assert again.status == Status.COMPLETED
        assert refunds == [1000]
    assert len([s for s in statements if "kind IS NOT NULL" in s]) == reads  # attach's only
    fenced = [s for s in statements if s.startswith("INSERT INTO entries") and "FROM runs" in s]
    assert len(fenced) == 1  # the approved step's: its transaction does not try it again


def test_a_file_that_is_not_a_database_is_a_clear_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not SQLite" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        SqliteCheckpointer(path)


def test_an_unknown_synchronous_level_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="synchronous"):
        SqliteCheckpointer(tmp_path / "x.sqlite3", synchronous="sometimes")


def test_the_decision_audit_is_append_only(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    with SqliteCheckpointer(path) as store:
        run = build_refund_workflow(store).start({})
        run.run()
        run.approve(by="ada")
    db = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("UPDATE decisions SET approver = 'mallory'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM decisions")


@pytest.mark.slow
def test_eight_processes_racing_decide_each_of_fifty_runs_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "race.sqlite3"
    with SqliteCheckpointer(path) as store:
        wf = build_refund_workflow(store)
        for _ in range(50):
            wf.start({}).run()
        ids = [r.run_id for r in store.list_runs("pending")]
        assert len(ids) == 50
    (tmp_path / "ids.json").write_text(json.dumps(ids))
    go = tmp_path / "go"
    workers = [
        spawn("race", str(path), str(go), str(i), str(tmp_path / "ids.json"), trace=tmp_path / "t")
        for i in range(8)
    ]
    for proc in workers:  # every worker has opened the database: now they all start at once
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    go.touch()
    results = []
    for proc in workers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "locked" not in err
        results.append(json.loads(out))
    assert sum(r["won"] for r in results) == 50
    assert sum(r["lost"] for r in results) == 8 * 50 - 50
    with SqliteCheckpointer(path) as store:
        assert len(store.list_runs("approved")) == 50
        audit = store.decisions()
        assert sum(d.accepted for d in audit) == 50
        assert sum(not d.accepted for d in audit) == 350
        for run in store.list_runs():
            assert [e.type for e in store.events(run.run_id)].count("approved") == 1


@pytest.mark.slow
def test_a_run_whose_worker_was_killed_completes_in_another_process(tmp_path: Path) -> None:
    path, trace = tmp_path / "crash.sqlite3", tmp_path / "trace"
    first = spawn("start", str(path), trace=trace, block=True)
    assert first.stdout is not None
    line = first.stdout.readline()  # returns once node 'b' has started, or at exit
    assert line.strip() == "blocked", first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)  # reap it and close its pipes
    with SqliteCheckpointer(path) as store:
        run = store.get_run("crash-run")
        assert (run.status, run.node, run.step) == (Status.RUNNING, "b", 1)
        assert run.lease_owner is not None  # the dead worker still holds it
    second = spawn("resume", str(path), "crash-run", trace=trace)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    result = json.loads(out)
    assert result == {"status": "completed", "state": {"n": 3, "a": 1, "b": 2, "c": 3}}
    assert trace.read_text().split() == ["a", "b", "b", "c"]  # a never re-ran; b re-ran once


def test_exactly_one_worker_continues_an_approved_run(tmp_path: Path) -> None:
    """Two workers (own connections) race to continue a run approved from elsewhere."""
    import threading

    from agentnb import RunBusy

    path = tmp_path / "continue.sqlite3"
    refunds: list[int] = []
    with SqliteCheckpointer(path) as store:
        run = build_refund_workflow(store, refunds).start({})
        run.run()
        store.decide(run.run_id, "approved", "cli-user")  # as `agentnb approve` does
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def worker() -> None:
        with SqliteCheckpointer(path) as store:
            mine = build_refund_workflow(store, refunds).attach(run.run_id)
            barrier.wait(timeout=30)
            try:
                mine.run()
                outcomes.append("drove")
            except RunBusy:
                outcomes.append("busy")

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert refunds == [1000]  # the approved node and the refund ran once
    assert "drove" in outcomes
    assert len(outcomes) == 2
    with SqliteCheckpointer(path) as store:
        types = [e.type for e in store.events(run.run_id)]
        assert types.count("approved") == 1
        assert types.count("completed") == 1
        assert [e.node for e in store.events(run.run_id) if e.type == "node_start"] == [
            "planner",
            "human_approval",
            "refund",
        ]


def _write_effects_watching_the_wal(path: Path, writes: int) -> tuple[int, int]:
    """Record ``writes`` effects of 1 kB; return the WAL's largest size and how often it shrank."""
    biggest = restarts = last = 0
    with SqliteCheckpointer(path) as store:
        for i in range(writes):
            store.record_effect(
                f"k{i}", run_id="r", step=i, node="n", name="x", result_json=json.dumps("x" * 1000)
            )
            size = os.path.getsize(f"{path}-wal")
            restarts += size < last
            biggest, last = max(biggest, size), size
        assert len(store.effects("r")) == writes
    return biggest, restarts


@pytest.mark.slow
def test_the_wal_stays_bounded_while_readers_keep_checkpoints_from_finishing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Readers that keep SQLite's own checkpoints from restarting the WAL make it grow with
    # every write; the store's truncating checkpoint bounds it. How soon a truncation finds a
    # gap between the readers' transactions depends on scheduling (a loaded machine preempts a
    # reader mid-transaction), so the bound is measured against the same writes in the same
    # run with nothing truncating (~44 MB), not against a fixed size (1.5-2 MB here, quiet or
    # with four busy processes on two cores).
    import threading

    from agentnb.store import sqlite as backend

    writes = 1500
    monkeypatch.setattr(backend, "WAL_LIMIT", 2**40)  # the store never truncates
    unbounded_path = tmp_path / "unbounded.sqlite3"
    sqlite3.connect(unbounded_path).close()
    with SqliteCheckpointer(unbounded_path):
        pass  # the schema, so that the reader below has a table to read
    holder = sqlite3.connect(unbounded_path, isolation_level=None)
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM effects").fetchall()  # a snapshot held throughout
    unbounded, _ = _write_effects_watching_the_wal(unbounded_path, writes)
    holder.execute("COMMIT")
    holder.close()

    # A limit 32 times smaller than the store's, checked 8 times as often: a check comes about
    # every limit's worth of writes, as at the store's own sizes (64 writes of ~30 kB, 8 MiB).
    monkeypatch.setattr(backend, "WAL_LIMIT", 256 * 1024)
    monkeypatch.setattr(backend, "WAL_CHECK_EVERY", 8)
    path = tmp_path / "runs.sqlite3"
    with SqliteCheckpointer(path):
        pass
    stop = threading.Event()

    def read() -> None:
        db = sqlite3.connect(path, isolation_level=None)
        while not stop.is_set():
            db.execute("BEGIN")
            db.execute("SELECT count(*), sum(length(result)) FROM effects").fetchall()
            db.execute("COMMIT")
        db.close()

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        biggest, restarts = _write_effects_watching_the_wal(path, writes)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert restarts >= 2  # truncated again and again, not once by luck
    assert biggest < unbounded / 4, (biggest, unbounded)


def _a_wal_nothing_checkpointed(path: Path) -> sqlite3.Connection:
    """A store at ``path`` with 100 writes in its WAL, none checkpointed: the connection
    returned holds the snapshot that kept them there, inside its transaction still."""
    holder = sqlite3.connect(path, isolation_level=None)
    with SqliteCheckpointer(path):
        pass  # the schema
    holder.execute("BEGIN")
    holder.execute("SELECT count(*) FROM effects").fetchall()  # nothing checkpoints past this
    _write_effects_watching_the_wal(path, 100)
    return holder


@pytest.mark.parametrize(
    ("limits_over", "reader_ms"),
    [
        (1, 25),  # one limit over, the checkpoint waits 50 ms: past a short reader
        (20, 100),  # 100 ms is more than 50, less than the 500 ms twenty limits over wait
    ],
)
def test_a_checkpoint_waits_longer_for_readers_the_further_the_wal_is_past_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limits_over: int, reader_ms: int
) -> None:
    # A reader stays inside a transaction for reader_ms while the store writes. The store's
    # first write checks the WAL, so the check falls on the write below.
    import threading

    from agentnb.store import sqlite as backend

    path = tmp_path / "runs.sqlite3"
    holder = _a_wal_nothing_checkpointed(path)
    wal = os.path.getsize(f"{path}-wal")
    monkeypatch.setattr(backend, "WAL_LIMIT", wal // limits_over - 1)

    # The timer's thread ends the reader's transaction: the connection may be used there.
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM effects").fetchall()  # a snapshot in the WAL
    holder.execute("COMMIT")
    ends = threading.Timer(reader_ms / 1000, reader.execute, ("COMMIT",))
    with SqliteCheckpointer(path) as store:
        ends.start()
        store.record_effect("k", run_id="r", step=0, node="n", name="x", result_json="1")
        truncated = os.path.getsize(f"{path}-wal")
        ends.join()
        assert store.effects("r")[-1].result == 1
    reader.close()
    holder.close()
    assert truncated == 0, (truncated, wal)


def test_a_checkpoint_waits_for_another_connections_checkpoint_to_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process holds the WAL's checkpoint lock (byte 121 of the -shm file, SQLite's
    # WAL format) for 50 ms, as SQLite's own checkpoint after another connection's commit
    # does: SQLite answers the store's checkpoint busy at once there, whatever the busy
    # timeout. Forty limits over, the store waits up to 400 ms, so it outlasts the lock.
    from agentnb.store import sqlite as backend

    path = tmp_path / "runs.sqlite3"
    holder = _a_wal_nothing_checkpointed(path)
    holder.execute("COMMIT")  # open still, so that the WAL outlives the writer's close
    wal = os.path.getsize(f"{path}-wal")
    monkeypatch.setattr(backend, "WAL_LIMIT", wal // 40)
    lock = (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 121)\n"
        "print('held', flush=True)\n"
        "time.sleep(0.05)\n"
    )
    command = [sys.executable, "-c", lock, f"{path}-shm"]
    with (
        SqliteCheckpointer(path) as store,
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as checkpointer,
    ):
        assert checkpointer.stdout is not None
        assert checkpointer.stdout.readline() == "held\n"
        store.record_effect("k", run_id="r", step=0, node="n", name="x", result_json="1")
        truncated = os.path.getsize(f"{path}-wal")
        assert checkpointer.wait(timeout=30) == 0
        assert store.effects("r")[-1].result == 1
    holder.close()
    assert truncated == 0, (truncated, wal)


def test_a_fenced_entry_is_written_only_while_its_fence_holds_a_running_lease_with_time_left(
    tmp_path: Path,
) -> None:
    from agentnb.store.dialect import NOW
    from agentnb.store.sql_steps import FENCED_ENTRY

    now = 1_000.0
    with SqliteCheckpointer(tmp_path / "a.sqlite3") as store:
        db = store._db
        db.execute(  # a lease of 10 s from now, on SQLite's clock (the statement's too)
            "INSERT INTO runs (run_id, graph, shape, status, max_steps, created_at, status_at, "
            f"lease_owner, lease_expires, fence) VALUES ('r1', 'g', 's', 'running', 9, 0, 0, "
            f"'me', {NOW} + 10, 3)",
        )

        def write(seq: int, fence: int = 3, half: float = 5) -> int:
            entry = ("r1", seq, seq, "a", None, "[]", now, None, None)
            rowcount: int = db.execute(FENCED_ENTRY, (*entry, "r1", fence, half)).rowcount
            return rowcount

        assert write(1) == 1
        assert write(2, fence=2) == 0  # a stale fence
        assert write(4, half=11) == 0  # less than half the lease left
        db.execute("UPDATE runs SET lease_owner = NULL WHERE run_id = 'r1'")
        assert write(5) == 0  # the lease released
        db.execute("UPDATE runs SET lease_owner = 'me', status = 'paused' WHERE run_id = 'r1'")
        assert write(6) == 0  # no longer running
        db.execute("UPDATE runs SET status = 'running' WHERE run_id = 'r1'")
        assert write(7) == 1
        seqs = [s for (s,) in db.execute("SELECT seq FROM entries WHERE run_id = 'r1'")]
        assert seqs == [1, 7]


def test_a_running_step_is_one_statement_its_own_transaction_and_the_rest_take_one(
    tmp_path: Path,
) -> None:
    from agentnb import StateGraph

    with SqliteCheckpointer(tmp_path / "s.sqlite3") as store:
        g = StateGraph("two")
        g.add_node("a", lambda s: {"n": 1}).add_node("b", lambda s: {"n": 2})
        g.set_entry_point("a").add_edge("a", "b")
        run = g.compile(store).start({"n": 0})
        statements: list[str] = []
        store._db.set_trace_callback(statements.append)
        run.step()  # a: the run stays running, so its entry is one fenced statement
        entries = [i for i, sql in enumerate(statements) if "INTO entries" in sql]
        assert len(entries) == 1
        # between the lease's transaction (taken) and the next one (given back):
        # no BEGIN or COMMIT of its own
        assert statements[entries[0] - 1] == "COMMIT"
        assert statements[entries[0] + 1] == "BEGIN IMMEDIATE"
        statements.clear()
        run.step()  # b ends the run: the run's row changes too, in one transaction
        store._db.set_trace_callback(None)
        assert run.status == "completed"
        begin = statements.index("BEGIN IMMEDIATE", 1)
        end = statements.index("COMMIT", begin)
        assert any("UPDATE runs SET status" in s for s in statements[begin:end])
        assert any("INTO entries" in s for s in statements[begin:end])
    with SqliteCheckpointer(tmp_path / "s.sqlite3") as again:
        assert [cp.state for cp in again.checkpoints(run.run_id)] == [
            {"n": 0},
            {"n": 1},
            {"n": 2},
        ]


def test_a_step_that_cannot_have_the_write_lock_is_a_store_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    from agentnb import StateGraph

    path = tmp_path / "locked.sqlite3"
    with SqliteCheckpointer(path, timeout=0.05) as store:
        g = StateGraph("chain")
        g.add_node("a", lambda s: {"n": 1}).add_node("b", lambda s: {"n": 2})
        g.set_entry_point("a").add_edge("a", "b")
        run = g.compile(store).start({"n": 0})
        fence = store.acquire(run.run_id, "me").fence
        from agentnb.store.records import Event
        from agentnb.store.writes import CheckpointWrite, StepCommit

        event = Event(run.run_id, 2, 1, "state_update", "a", {"delta": {"n": 1}}, 1.0)
        change = StepCommit(
            Status.RUNNING, "b", 1, [event], CheckpointWrite(1, "b", '{"n":1}', None)
        )
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreError, match=r"cannot write to .*locked"):
                store.commit(run.run_id, fence, change, lease_seconds=60)
        finally:
            other.execute("COMMIT")
            other.close()
        assert [cp.step for cp in store.checkpoints(run.run_id)] == [0]
        store.commit(run.run_id, fence, change, lease_seconds=60)  # the lock is free again
        assert store.checkpoint(run.run_id).state == {"n": 1}


def test_a_local_directory_reports_open_files_sizes_and_the_probe_leaves_nothing(
    tmp_path: Path,
) -> None:
    assert sqlite_store.keeps_sizes(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_in_the_browser_a_database_on_a_drive_without_open_sizes_is_refused_with_where_to_put_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # JupyterLite's /drive is such a file system (tests/e2e/test_lite_browser.py meets it).
    probed: list[str] = []
    monkeypatch.setattr(sys, "platform", "emscripten")
    monkeypatch.setattr(sqlite_store, "keeps_sizes", lambda d: probed.append(d) or False)
    with pytest.raises(StoreFileError) as refused:
        SqliteCheckpointer(tmp_path / "runs.sqlite3")
    assert probed == [str(tmp_path)]
    assert refused.value.doing == "open"
    assert "JupyterLite's browser drive" in refused.value.reason
    assert "SqliteCheckpointer('/tmp/runs.sqlite3')" in refused.value.fix
    assert list(tmp_path.iterdir()) == []  # nothing created
    SqliteCheckpointer(":memory:").close()  # nothing on a file system: nothing to probe
    assert probed == [str(tmp_path)]


def test_outside_the_browser_the_file_system_is_not_probed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def probe(directory: str) -> bool:
        raise AssertionError("probed")

    monkeypatch.setattr(sqlite_store, "keeps_sizes", probe)
    SqliteCheckpointer(tmp_path / "runs.sqlite3").close()
