"""Writes whose COMMIT a server crash cuts off: the answer a write gives is what the
database holds (issue 21, point 1).

The server delays every COMMIT before it is durable (``commit_delay``, fsync on); a
process (tests/store/commit_worker.py) approves runs or commits steps; while
``pg_stat_activity`` shows its COMMIT, at a random moment of the delay, the server is
restarted with ``pg_ctl restart -m immediate`` (a crash: what was not flushed is gone),
and another client commits a few transactions as soon as it is back — they take the
transaction ids the lost one had, so asking "did transaction N commit?" would answer for
them. Whatever the timing, a write returns with its row in the database, or raises a
typed :class:`~agentnb.errors.StoreError` with nothing written, and a retry does it once.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentnb import PostgresCheckpointer
from agentnb.errors import MissingDependency, StoreUnavailable
from agentnb.examples import build_refund_workflow
from agentnb.testing import ThrowawayPostgres
from tests.conftest import server_missing

WORKER = Path(__file__).with_name("commit_worker.py")
ROOT = Path(__file__).parents[2]
CRASHES = 20
"""Crashes during a COMMIT each test goes through (with random timing)."""
ATTEMPTS = 45
"""Writes tried at most to get them: one whose COMMIT is over before it is seen is not one."""
SERVER = {
    "commit_delay": "100000",  # 0.1 s between a COMMIT's WAL record and its flush ...
    "commit_siblings": "0",  # ... for every commit, however few others are running
    "wal_writer_delay": "10s",  # nor does the WAL writer flush it meanwhile
}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[ThrowawayPostgres]:
    """A server of this module's own, fsync on (``commit_delay`` needs it): its tests crash it."""
    try:
        cluster = ThrowawayPostgres(settings=SERVER)
    except (MissingDependency, StoreUnavailable) as exc:
        server_missing(str(exc))
    try:
        yield cluster
    finally:
        cluster.remove()


_SCHEMAS = itertools.count(1)


@pytest.fixture
def dsn(server: ThrowawayPostgres) -> str:
    schema = f"c{os.getpid()}_{next(_SCHEMAS)}"
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return server.dsn(options=f"-csearch_path%3D{schema}")


class Writer:
    """The worker process: commands in, one JSON answer per command out."""

    def __init__(self, dsn: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), dsn],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._answers: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        assert self.answer() == {"ready": True}

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._answers.put(line)
        self._answers.put("")  # the process ended

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def answered(self) -> bool:
        return not self._answers.empty()

    def answer(self) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=120)
        except queue.Empty:
            pytest.fail("the worker gave no answer in 120 s")
        if not line:
            self.proc.wait(timeout=30)
            assert self.proc.stderr is not None
            pytest.fail(f"the worker ended: {self.proc.stderr.read()}")
        return json.loads(line)  # type: ignore[no-any-return]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def writer(dsn: str) -> Iterator[Writer]:
    w = Writer(dsn)
    try:
        yield w
    finally:
        w.close()


def _committing(admin: psycopg.Connection[Any]) -> bool:
    """Whether a store's connection is in a COMMIT (the shared transaction's, or the
    implicit one of the one-statement step)."""
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'agentnb' "
        "AND state = 'active' AND (query LIKE '%%COMMIT' OR query LIKE 'INSERT INTO entries%%')"
    ).fetchone()
    return row is not None and row[0] > 0


def _take_the_lost_ids(server: ThrowawayPostgres) -> None:
    """Another client commits a few transactions as soon as the server is back."""
    with psycopg.connect(server.dsn(), autocommit=True) as other:
        other.execute("SET synchronous_commit = off")
        other.execute("CREATE TABLE IF NOT EXISTS public.other (n integer)")
        for n in range(8):
            other.execute("INSERT INTO public.other VALUES (%s)", (n,))


def crash_in_commit(server: ThrowawayPostgres, writer: Writer, command: str) -> dict[str, Any]:
    """Send ``command``; crash the server during its COMMIT. The answer, and whether the
    crash came in time (``"crashed"``)."""
    writer.send(command)
    deadline = time.monotonic() + 30
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        while not _committing(admin):
            if writer.answered():  # done before its COMMIT was seen: no crash this time
                return {**writer.answer(), "crashed": False}
            assert time.monotonic() < deadline, f"{command!r} never reached its COMMIT"
            time.sleep(0.002)
    time.sleep(random.uniform(0.0, 0.06))  # the random moment of the COMMIT's delay
    server.restart("immediate")
    _take_the_lost_ids(server)
    return {**writer.answer(), "crashed": True}


def _rows(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _refused_with_nothing_written(answer: dict[str, Any]) -> None:
    assert answer["typed"], f"an untyped error escaped: {answer['error']}: {answer['message']}"


def test_an_approval_cut_off_in_its_commit_is_decided_once_and_says_so(
    server: ThrowawayPostgres, dsn: str, writer: Writer
) -> None:
    with PostgresCheckpointer(dsn, synchronous_commit="off") as store:
        wf = build_refund_workflow(store)
        run_ids = []
        for _ in range(ATTEMPTS):
            run = wf.start({"requested": 1000})
            run.run()
            run_ids.append(run.run_id)
    crashes = 0
    for run_id in run_ids:
        answer = crash_in_commit(server, writer, f"approve {run_id}")
        crashes += answer["crashed"]
        decided = _rows(dsn, "SELECT id FROM decisions WHERE run_id = %s AND accepted = 1", run_id)
        (status,) = _rows(dsn, "SELECT status FROM runs WHERE run_id = %s", run_id)[0]
        if answer["ok"]:
            assert decided == [(answer["id"],)], f"approve() returned decision {answer}"
            assert status == "approved"
        else:
            _refused_with_nothing_written(answer)
            assert decided == [], f"{answer['error']} raised, yet the decision was written"
            assert status == "pending"
            writer.send(f"approve {run_id}")  # the retry decides it, once
            again = writer.answer()
            assert again["ok"], again
            assert _rows(
                dsn, "SELECT id FROM decisions WHERE accepted = 1 AND run_id = %s", run_id
            ) == [(again["id"],)]
        if crashes == CRASHES:
            break
    assert crashes == CRASHES, f"only {crashes} of {ATTEMPTS} approvals were cut off in COMMIT"


STATUSES = ("pending", "running", "running")
"""A pause (the shared transaction), a step after it (shared too: the run's status
changes), a plain step after that (the one-statement step)."""


def test_a_step_cut_off_in_its_commit_is_written_once_and_says_so(
    server: ThrowawayPostgres, dsn: str, writer: Writer
) -> None:
    crashes = 0
    for n in range(1, ATTEMPTS + 1):
        status = STATUSES[n % len(STATUSES)]
        answer = crash_in_commit(server, writer, f"step {n} {status}")
        crashes += answer["crashed"]
        steps = [
            s for (s,) in _rows(dsn, "SELECT step FROM entries WHERE run_id = 'steps' ORDER BY seq")
        ]
        if answer["ok"]:
            assert steps == list(range(n + 1)), f"step {n} returned, the database holds {steps}"
        else:
            _refused_with_nothing_written(answer)
            assert steps == list(range(n)), f"{answer['error']} raised, yet step {n} was written"
            writer.send(f"step {n} {status}")  # the retry writes it, once
            again = writer.answer()
            assert again["ok"], again
            steps = [
                s
                for (s,) in _rows(
                    dsn, "SELECT step FROM entries WHERE run_id = 'steps' ORDER BY seq"
                )
            ]
            assert steps == list(range(n + 1))
        assert _rows(dsn, "SELECT status FROM runs WHERE run_id = 'steps'") == [(status,)]
        if crashes == CRASHES:
            break
    assert crashes == CRASHES, f"only {crashes} of {ATTEMPTS} steps were cut off in COMMIT"
