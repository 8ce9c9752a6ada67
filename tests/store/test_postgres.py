"""What only the PostgreSQL checkpointer does: its SQL spellings, connection errors,
migrations, commit levels, per-run locks and transactions cut off by a lost connection."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import agentnb.store
from agentnb import (
    END,
    LeaseLost,
    PostgresCheckpointer,
    SchemaVersionError,
    StateGraph,
    Status,
    StoreError,
    StoreUnavailable,
)
from agentnb.examples import build_refund_workflow
from agentnb.store import chains, postgres_session
from agentnb.store.base import CheckpointWrite, StepCommit, new_owner
from agentnb.store.deltas import SnapshotPolicy
from agentnb.store.postgres_dialect import REWRITES, spell
from agentnb.store.postgres_locks import run_lock
from agentnb.store.postgres_schema import LATEST
from agentnb.store.postgres_session import Disconnected, masked
from agentnb.store.records import Event, RunRecord
from agentnb.testing import ThrowawayPostgres


@pytest.fixture
def pg(pg_dsn: str) -> Iterator[PostgresCheckpointer]:
    with PostgresCheckpointer(pg_dsn) as store:
        yield store


def new_run(store: PostgresCheckpointer, run_id: str = "r1") -> None:
    now = time.time()
    record = RunRecord(run_id, "g", "s", Status.RUNNING, "a", 0, 1, 50, now, now)
    event = Event(run_id, 1, 0, "run_started", "a", {}, now)
    store.create_run(record, CheckpointWrite(0, "a", "{}"), [event])


def step(
    store: PostgresCheckpointer, run_id: str, fence: int, n: int, status: Status = Status.RUNNING
) -> None:
    event = Event(run_id, n + 1, n, "node_completed", "a", {"n": n}, time.time())
    change = StepCommit(status, "a", n, [event], CheckpointWrite(n, "a", f'{{"n":{n}}}'))
    store.commit(run_id, fence, change, lease_seconds=30)


# -- the shared SQL in PostgreSQL's spelling ------------------------------------------------


@pytest.mark.parametrize(
    ("shared", "postgres"),
    [
        ("SELECT 1 WHERE a LIKE '%x'", "SELECT 1 WHERE a LIKE '%%x'"),
        ("SELECT a FROM t WHERE b = ?", "SELECT a FROM t WHERE b = %s"),
        ("SELECT a FROM t INDEXED BY t_by_a WHERE a = 1", "SELECT a FROM t WHERE a = 1"),
        (
            "UPDATE t SET e = ((julianday('now') - 2440587.5) * 86400.0) + 30",
            "UPDATE t SET e = CAST(EXTRACT(EPOCH FROM statement_timestamp()) AS double precision)"
            " + 30",
        ),
    ],
)
def test_each_spelling_postgresql_takes_differently_is_rewritten(
    shared: str, postgres: str
) -> None:
    assert spell(shared) == postgres


def test_every_rewrite_is_pinned_by_an_example() -> None:
    assert len(REWRITES) == 4  # one example above per rewrite: add one with a new rewrite


def test_sql_in_the_shared_spelling_is_left_as_it_is() -> None:
    shared = "INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING RETURNING CAST(a AS TEXT)"
    assert spell(shared) == shared


def test_the_shared_sql_uses_no_spelling_only_sqlite_speaks() -> None:
    # Each of these once needed a rewrite for PostgreSQL; the shared statements now say
    # the same in the SQL both engines speak (ON CONFLICT DO NOTHING, CASE, CAST, no id).
    store = Path(agentnb.store.__file__).parent
    shared = [store / "sql.py", store / "machines.py", *store.glob("sql_*.py")]
    sqlite_only = ("INSERT OR IGNORE", "OR REPLACE", "max(r.", "sqlite_master", "VALUES (NULL")
    found = [
        (path.name, spelling)
        for path in shared
        for spelling in sqlite_only
        if spelling in path.read_text("utf-8")
    ]
    assert len(shared) >= 8
    assert found == []


def test_a_dsns_password_never_appears_in_messages() -> None:
    assert masked("postgresql://u:s3cret@h:5432/d") == "postgresql://u:***@h:5432/d"
    assert masked("host=h password=s3cret dbname=d") == "host=h password=*** dbname=d"
    assert masked("postgresql://h/d") == "postgresql://h/d"


# -- connecting -----------------------------------------------------------------------------


def test_a_wrong_password_is_a_typed_error_that_names_the_fix(
    pg_cluster: ThrowawayPostgres,
) -> None:
    with pytest.raises(StoreUnavailable, match="password authentication failed") as caught:
        PostgresCheckpointer(pg_cluster.dsn(password="wrong"))
    assert caught.value.fix == "check the user name and password in the DSN"
    assert "wrong" not in str(caught.value)


def test_an_unknown_database_is_a_typed_error(pg_cluster: ThrowawayPostgres) -> None:
    with pytest.raises(StoreUnavailable, match="does not exist") as caught:
        PostgresCheckpointer(pg_cluster.dsn("no_such_db"))
    assert "createdb" in caught.value.fix


@pytest.mark.parametrize("dsn", ["not a dsn", "postgresql://u@127.0.0.1:99999/db", "hostx=1"])
def test_a_malformed_dsn_is_a_typed_error_that_shows_the_form(dsn: str) -> None:
    with pytest.raises(StoreUnavailable) as caught:
        PostgresCheckpointer(dsn)
    assert caught.value.fix == "write the DSN as postgresql://USER:PASSWORD@HOST:PORT/DATABASE"


def test_a_server_that_is_down_at_start_is_a_typed_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreUnavailable, match="server is running") as caught:
        PostgresCheckpointer(f"postgresql://u:secret@127.0.0.1:{port}/db")
    assert caught.value.where == f"postgresql://u:***@127.0.0.1:{port}/db"


def test_a_server_that_never_answers_is_a_typed_error_after_the_connect_timeout() -> None:
    with socket.socket() as silent:  # accepts TCP connections, never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with pytest.raises(StoreUnavailable, match="timeout"):
            PostgresCheckpointer(f"postgresql://u:p@127.0.0.1:{port}/db", connect_timeout=1)


def test_without_psycopg_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_psycopg(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "psycopg":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psycopg)
    with pytest.raises(Exception, match=r'pip install "agentnb\[postgres\]"'):
        postgres_session.load_psycopg()


# -- migrations -----------------------------------------------------------------------------


def test_connecting_migrates_once_and_reconnecting_keeps_the_runs(pg_dsn: str) -> None:
    with PostgresCheckpointer(pg_dsn) as store:
        build_refund_workflow(store).start({})
    with PostgresCheckpointer(pg_dsn) as store:
        assert len(store.list_runs()) == 1
        rows = store._session.raw("SELECT version FROM schema_version").fetchall()
    assert rows == [(v,) for v in range(1, LATEST + 1)]


def test_a_version_4_database_reads_every_step_back_after_version_5(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Version 4's chains: one snapshot, then deltas only (no skips); the snapshot's kind
    # NULL, as a row written before version 2; its indexes partial on state IS NOT NULL.
    monkeypatch.setattr(chains, "DEFAULT_POLICY", SnapshotPolicy(10**9, 10**9))
    g = StateGraph("loop")
    g.add_node("agent", lambda s: {"n": s["n"] + 1, "messages": [f"m{s['n']}"]})
    g.set_entry_point("agent")
    g.add_conditional_edge("agent", lambda s: "agent" if s["n"] < 150 else END, ["agent", END])
    with PostgresCheckpointer(pg_dsn) as store:
        run = g.compile(store, max_steps=200).start({"n": 0, "messages": []}).run()
        store._session.raw("UPDATE entries SET kind = NULL WHERE kind = 'snapshot'")
        store._session.raw("DROP INDEX entries_anchors")  # (entries_chain: gone in version 6)
        store._session.raw(
            "CREATE INDEX entries_chain ON entries (run_id, step, seq, kind, node, at) "
            "WHERE state IS NOT NULL"
        )
        store._session.raw("DELETE FROM schema_version WHERE version >= 5")
    monkeypatch.undo()
    with PostgresCheckpointer(pg_dsn) as store:
        for step in range(151):
            state = {"n": step, "messages": [f"m{i}" for i in range(step)]}
            assert store.checkpoint(run.run_id, step).state == state
        assert len(store.list_checkpoints(run.run_id)) == 151
        (kinds,) = store._session.raw(
            "SELECT count(*) FROM entries WHERE kind IS NULL AND state IS NOT NULL"
        ).fetchone()
        assert kinds == 0
        # Version 6: the reads use the primary key; the covering index is gone.
        indexes = store._session.raw(
            "SELECT to_regclass('entries_chain'), to_regclass('entries_anchors')"
        ).fetchone()
        assert indexes == (None, "entries_anchors")


def test_flat_instances_stored_before_version_8_go_on_after_it(pg_dsn: str) -> None:
    # Before version 8 a flat StateMachine's instance row kept chart NULL (its other
    # columns and its event records are written as they are now).
    from agentnb.fsm import StateMachine

    def lights() -> StateMachine:
        m = StateMachine("lights", ["RED", "GREEN", "OFF"], initial="RED", final=["OFF"])
        m.add_transition("RED", "timer", "GREEN")
        m.add_transition("GREEN", "timer", "RED")
        m.add_transition("RED", "off", "OFF")
        return m

    with PostgresCheckpointer(pg_dsn) as store:
        lights().start("midway", {"n": 1}, store=store).send("timer")
        lights().start("ended", store=store).send("off")
        store._session.raw("UPDATE machine_instances SET chart = NULL")
        store._session.raw("DELETE FROM schema_version WHERE version >= 8")
    with PostgresCheckpointer(pg_dsn) as store:
        (nulls,) = store._session.raw(
            "SELECT count(*) FROM machine_instances WHERE chart IS NULL"
        ).fetchone()
        assert nulls == 0
        midway = lights().resume("midway", store=store)
        assert (midway.state, midway.context, midway.is_final) == ("GREEN", {"n": 1}, False)
        assert str(midway.send("timer")) == "#2 GREEN --timer--> RED"
        ended = lights().resume("ended", store=store)
        assert (ended.state, ended.is_final, ended.allowed_events()) == ("OFF", True, [])


def test_a_database_from_a_newer_agentnb_is_refused(pg_dsn: str) -> None:
    with PostgresCheckpointer(pg_dsn) as store:
        store._session.raw("INSERT INTO schema_version VALUES (99, 0)")
    with pytest.raises(SchemaVersionError, match="schema version 99") as caught:
        PostgresCheckpointer(pg_dsn)
    assert "***" in caught.value.path


def test_processes_connecting_at_once_to_a_new_database_migrate_it_once(pg_dsn: str) -> None:
    errors: list[BaseException] = []

    def connect() -> None:
        try:
            PostgresCheckpointer(pg_dsn).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=connect) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    with PostgresCheckpointer(pg_dsn) as store:
        (count,) = store._session.raw("SELECT count(*) FROM schema_version").fetchone()
    assert count == LATEST


def test_the_audit_is_append_only_in_the_database_itself(pg: PostgresCheckpointer) -> None:
    run = build_refund_workflow(pg).start({"requested": 1000})
    run.run()
    run.approve(by="ada")
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        pg._session.raw("UPDATE decisions SET approver = 'mallory'")
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        pg._session.raw("DELETE FROM decisions")


# -- commit levels ----------------------------------------------------------------------------


def test_an_unknown_synchronous_commit_level_is_refused(pg_dsn: str) -> None:
    with pytest.raises(StoreError, match="not a PostgreSQL level"):
        PostgresCheckpointer(pg_dsn, synchronous_commit="sometimes")


def test_decisions_and_effects_commit_synchronously_when_steps_do_not(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresCheckpointer(pg_dsn, synchronous_commit="off")
    session = store._session
    raw = session.raw
    seen: list[tuple[str, str]] = []
    writes: list[str] = []

    def probe(sql: str, params: Any = ()) -> Any:
        if sql.endswith("COMMIT"):  # the mark and COMMIT, one round trip
            (level,) = raw("SHOW synchronous_commit").fetchone()
            text = " ".join(writes)
            kind = "decision" if "decisions" in text else "effect" if "effects" in text else "step"
            seen.append((kind, level))
            writes.clear()
        return raw(sql, params)

    execute = session.execute

    def noted(sql: str, params: Any = ()) -> Any:
        if session.in_transaction and sql.lstrip().upper().startswith(("INSERT", "UPDATE")):
            writes.append(sql)
        return execute(sql, params)

    monkeypatch.setattr(session, "raw", probe)
    monkeypatch.setattr(session, "execute", noted)
    paid: list[int] = []
    with store:
        run = build_refund_workflow(store, paid).start({"requested": 900})
        run.run()
        run.approve(by="ada")
        run.run()
    assert paid == [900]
    assert {level for kind, level in seen if kind == "step"} == {"off"}
    assert {level for kind, level in seen if kind != "step"} == {"on"}
    assert {kind for kind, _ in seen} == {"step", "decision", "effect"}


# -- locks ----------------------------------------------------------------------------------


def test_a_run_locked_by_one_transaction_does_not_hold_up_another_run(
    pg: PostgresCheckpointer, pg_dsn: str
) -> None:
    new_run(pg, "held")
    new_run(pg, "free")
    with psycopg.connect(pg_dsn) as other:  # a transaction holding run "held"'s lock
        other.execute("SELECT pg_advisory_xact_lock_shared(0, 0)")
        other.execute("SELECT pg_advisory_xact_lock(1, %s)", (run_lock("held"),))
        fence = pg.acquire("free", new_owner()).fence
        step(pg, "free", fence, 1)  # commits while "held" stays locked
        assert pg.checkpoint("free").state == {"n": 1}

        done = threading.Event()
        blocked = threading.Thread(
            target=lambda: (pg.acquire("held", new_owner()), done.set()), daemon=True
        )
        blocked.start()
        deadline = time.monotonic() + 30
        while not _waiting_on_a_lock(other) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _waiting_on_a_lock(other)
        assert not done.is_set()
    blocked.join(timeout=30)  # the other transaction ended: the lock is free
    assert done.is_set()


def _waiting_on_a_lock(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    ).fetchone()
    return row is not None and row[0] > 0


# -- a connection lost inside a transaction ---------------------------------------------------


def test_a_transaction_cut_off_before_its_commit_is_run_again_once(
    pg: PostgresCheckpointer, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_run(pg)
    fence = pg.acquire("r1", new_owner()).fence
    session = pg._session
    raw = session.raw
    cuts: list[int] = []

    def cut_before_commit(sql: str, params: Any = ()) -> Any:
        if sql.endswith("COMMIT") and not cuts:
            (pid,) = raw("SELECT pg_backend_pid()").fetchone()
            cuts.append(pid)
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return raw(sql, params)

    monkeypatch.setattr(session, "raw", cut_before_commit)
    step(pg, "r1", fence, 1, Status.PENDING)  # a pause: the shared transaction
    assert cuts
    assert session.reconnects >= 1
    assert [c.step for c in pg.checkpoints("r1")] == [0, 1]
    assert [e.seq for e in pg.events("r1")] == [1, 2]
    assert pg.get_run("r1").status == Status.PENDING


def test_a_plain_step_is_one_statement_in_one_round_trip(
    pg: PostgresCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_run(pg)
    fence = pg.acquire("r1", new_owner()).fence
    session = pg._session
    sent: list[str] = []
    for name in ("raw", "execute"):
        send = getattr(session, name)
        monkeypatch.setattr(
            session,
            name,
            lambda sql, params=(), send=send: (sent.append(sql), send(sql, params))[1],
        )
    step(pg, "r1", fence, 1)
    assert len(sent) == 1
    assert sent[0].startswith("INSERT INTO entries")
    assert "FOR SHARE" in sent[0]
    assert pg.checkpoint("r1").state == {"n": 1}


def _cut_in_flight(session: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Terminate the session's backend as its first plain step is sent."""
    raw = session.raw
    cuts: list[int] = []

    def cut(sql: str, params: Any = ()) -> Any:
        if "FOR SHARE" in sql and not cuts:
            (pid,) = raw("SELECT pg_backend_pid()").fetchone()
            cuts.append(pid)
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        return raw(sql, params)

    monkeypatch.setattr(session, "raw", cut)
    return cuts


def test_a_plain_step_cut_off_in_flight_is_written_once(
    pg: PostgresCheckpointer, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_run(pg)
    fence = pg.acquire("r1", new_owner()).fence
    cuts = _cut_in_flight(pg._session, pg_dsn, monkeypatch)
    step(pg, "r1", fence, 1)
    assert cuts
    assert pg._session.reconnects >= 1
    assert [c.step for c in pg.checkpoints("r1")] == [0, 1]
    assert [e.seq for e in pg.events("r1")] == [1, 2]


def test_a_plain_step_whose_answer_was_lost_is_not_written_again(
    pg: PostgresCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_run(pg)
    fence = pg.acquire("r1", new_owner()).fence
    session = pg._session
    raw = session.raw
    lost: list[str] = []

    def lose_the_answer(sql: str, params: Any = ()) -> Any:
        result = raw(sql, params)
        if "FOR SHARE" in sql and not lost:
            lost.append(sql)
            raise Disconnected("the server's answer to the step never arrived")
        return result

    monkeypatch.setattr(session, "raw", lose_the_answer)
    step(pg, "r1", fence, 1)  # committed: written again, its seq would be a duplicate key
    step(pg, "r1", fence, 2)
    assert lost
    assert [c.step for c in pg.checkpoints("r1")] == [0, 1, 2]
    assert [e.seq for e in pg.events("r1")] == [1, 2, 3]


def test_a_plain_step_racing_a_takeover_is_refused_once_the_takeover_commits(
    pg: PostgresCheckpointer, pg_dsn: str
) -> None:
    new_run(pg)
    fence = pg.acquire("r1", new_owner()).fence
    outcome: list[BaseException | None] = []
    with psycopg.connect(pg_dsn) as other:  # another worker's lease, not committed yet
        other.execute("UPDATE runs SET fence = fence + 1, lease_owner = 'b' WHERE run_id = 'r1'")
        stepping = threading.Thread(target=lambda: outcome.append(_try_step(pg, fence)))
        stepping.start()
        deadline = time.monotonic() + 30
        while not _waiting_on_a_row(other) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _waiting_on_a_row(other)  # the step waits for the row it checks
        other.commit()
    stepping.join(timeout=30)
    assert len(outcome) == 1
    assert isinstance(outcome[0], LeaseLost)
    assert [c.step for c in pg.checkpoints("r1")] == [0]


def _try_step(pg: PostgresCheckpointer, fence: int) -> BaseException | None:
    try:
        step(pg, "r1", fence, 1)
    except BaseException as exc:  # the thread reports it to the test
        return exc
    return None


def _waiting_on_a_row(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype IN ('transactionid', 'tuple') AND NOT granted"
    ).fetchone()
    return row is not None and row[0] > 0


def test_a_commit_whose_answer_was_lost_is_not_run_again(
    pg: PostgresCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = build_refund_workflow(pg).start({"requested": 1000})
    run.run()
    session = pg._session
    raw = session.raw
    lost: list[str] = []

    def lose_the_answer(sql: str, params: Any = ()) -> Any:
        result = raw(sql, params)
        if sql.endswith("COMMIT") and not lost:
            lost.append(sql)
            raise Disconnected("the server's answer to COMMIT never arrived")
        return result

    monkeypatch.setattr(session, "raw", lose_the_answer)
    decision = pg.decide(run.run_id, "approved", "ada")  # committed: not decided twice
    assert lost
    assert decision.accepted
    assert [(d.approver, d.accepted) for d in pg.decisions(run.run_id)] == [("ada", True)]
    assert pg.get_run(run.run_id).status == Status.APPROVED


def test_a_commit_cut_off_while_the_server_stays_away_says_the_write_may_have_been_kept(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with PostgresCheckpointer(pg_dsn, reconnect_seconds=0.3) as store:
        run = build_refund_workflow(store).start({"requested": 1000})
        run.run()
        session = store._session
        raw = session.raw

        def refused() -> Any:
            raise StoreUnavailable(session.where, "connection refused", "start the server")

        def kept_then_gone(sql: str, params: Any = ()) -> Any:
            result = raw(sql, params)
            if sql.endswith("COMMIT"):
                monkeypatch.setattr(session, "_connect", refused)
                raise Disconnected("the server went away before COMMIT's answer arrived")
            return result

        monkeypatch.setattr(session, "raw", kept_then_gone)
        with pytest.raises(StoreUnavailable, match="may have been kept"):
            store.decide(run.run_id, "approved", "ada")
        monkeypatch.undo()
    with PostgresCheckpointer(pg_dsn) as store:  # it was: the error did not say otherwise
        assert [d.accepted for d in store.decisions(run.run_id)] == [True]


def test_no_write_learns_its_outcome_from_a_transaction_ids_status() -> None:
    # After a crash the server hands out again the ids it never made durable: their
    # status can be another client's transaction's (tests/store/test_postgres_commits.py).
    folder = Path(agentnb.store.__file__).parent
    asking = [
        path.name
        for path in sorted(folder.rglob("*.py"))
        if any(f in path.read_text() for f in ("pg_xact_status(", "txid_status(", "xact_id()"))
    ]
    assert asking == []


def test_an_idle_connection_terminated_by_the_server_is_replaced(
    pg: PostgresCheckpointer, pg_dsn: str
) -> None:
    new_run(pg)
    (pid,) = pg._session.raw("SELECT pg_backend_pid()").fetchone()
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert pg.get_run("r1").status == Status.RUNNING
    fence = pg.acquire("r1", new_owner()).fence
    step(pg, "r1", fence, 1)
    assert pg._session.reconnects >= 1
    assert [c.step for c in pg.checkpoints("r1")] == [0, 1]


# -- LISTEN / NOTIFY --------------------------------------------------------------------------


def listening(store: PostgresCheckpointer) -> Any:
    import asyncio

    # The first wait starts listening, and returns once it listens.
    assert asyncio.run(store.listener.await_work("w", 30)) is True
    return store.listener


def woken(listener: Any, timeout: float) -> bool:
    import asyncio

    return bool(asyncio.run(listener.await_work("w", timeout)))


def queued_workflow(store: PostgresCheckpointer) -> Any:
    from agentnb import StateGraph

    return StateGraph("q").add_node("a", lambda s: {"n": 1}).set_entry_point("a").compile(store)


def test_a_submitted_run_wakes_a_listening_worker(pg: PostgresCheckpointer, pg_dsn: str) -> None:
    listener = listening(pg)
    with PostgresCheckpointer(pg_dsn) as other:
        queued_workflow(other).submit({})
    assert woken(listener, 30) is True


def test_an_approval_wakes_a_listening_worker(pg: PostgresCheckpointer, pg_dsn: str) -> None:
    run = build_refund_workflow(pg).start({"requested": 1000})
    run.run()
    listener = listening(pg)
    with PostgresCheckpointer(pg_dsn) as other:
        other.decide(run.run_id, "approved", "ada")
    assert woken(listener, 30) is True


def test_steps_nobody_waits_for_wake_no_worker(pg: PostgresCheckpointer, pg_dsn: str) -> None:
    listener = listening(pg)
    with PostgresCheckpointer(pg_dsn) as other:
        new_run(other, "r2")
        step(other, "r2", other.acquire("r2", new_owner()).fence, 1)
    assert woken(listener, 0.2) is False


def test_a_cancelled_wait_leaves_its_wake_up_for_the_next(
    pg: PostgresCheckpointer, pg_dsn: str
) -> None:
    import asyncio
    import time

    listener = listening(pg)

    async def cancel_one() -> bool:
        task = asyncio.ensure_future(pg.await_work("w", 30))
        await asyncio.sleep(0)  # let it start waiting
        # The sign arrives while the loop is held: the wait has heard it but not returned.
        seen = listener._work.generation
        with PostgresCheckpointer(pg_dsn) as other:
            queued_workflow(other).submit({})
        deadline = time.monotonic() + 30
        while listener._work.generation == seen:
            assert time.monotonic() < deadline, "the submitted run was never announced"
            time.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return bool(await listener.await_work("w", 30))

    assert asyncio.run(cancel_one()) is True  # what the cancelled wait heard is not lost


def test_the_store_keeps_its_commit_level_on_a_connection_it_reopened(pg_dsn: str) -> None:
    with PostgresCheckpointer(pg_dsn, synchronous_commit="off") as store:
        (pid,) = store._session.raw("SELECT pg_backend_pid()").fetchone()
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert store.list_runs() == []  # reconnects
        assert store._session.reconnects >= 1
        (level,) = store._session.raw("SHOW synchronous_commit").fetchone()
        assert level == "off"


def test_a_read_whose_new_connection_is_cut_too_connects_again(
    pg: PostgresCheckpointer, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server going down (pg_ctl restart -m immediate) may still let a connection in and
    # then close it: the read retried on the new connection is cut off too, and must be
    # retried again, not escape as a raw psycopg error (seen once in a loaded make test).
    new_run(pg)
    session = pg._session
    connect = session._connect
    cuts = 2

    def connect_and_cut() -> Any:
        nonlocal cuts
        conn = connect()
        if cuts:
            cuts -= 1
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        return conn

    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (session.conn.info.backend_pid,))
    monkeypatch.setattr(session, "_connect", connect_and_cut)
    assert pg.get_run("r1").status == Status.RUNNING
    assert cuts == 0
    assert session.reconnects >= 3


def test_a_retention_delete_cut_off_mid_transaction_is_run_again_whole(
    pg: PostgresCheckpointer, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deleting a run's audit sends one statement per decision (executemany) inside the
    # deletion's transaction: a connection lost there must roll back and run it again,
    # not escape as a raw psycopg error.
    run = build_refund_workflow(pg).start({"requested": 1000})
    run.run()
    pg.decide(run.run_id, "rejected", "ada")
    session = pg._session
    executemany = session.executemany
    cuts: list[int] = []

    def cut_then_run(sql: str, rows: Any) -> None:
        if not cuts:
            cuts.append(session.conn.info.backend_pid)
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (cuts[0],))
        executemany(sql, rows)

    monkeypatch.setattr(session, "executemany", cut_then_run)
    pruned = pg.delete_run(run.run_id, include_audit=True)
    assert cuts
    assert session.reconnects >= 1
    assert (pruned.runs, pruned.audit_rows) == ((run.run_id,), 1)
    assert pg.decisions(run.run_id) == []
    assert run.run_id not in {r.run_id for r in pg.list_runs()}
