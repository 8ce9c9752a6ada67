"""Writes whose COMMIT a server crash cuts off: the answer a write gives is what the
database holds (issue 21, point 1).

The server delays every COMMIT before it is durable (``commit_delay``, fsync on). Two
processes (tests/store/commit_worker.py) write at once, one approving runs, one
committing steps; while ``pg_stat_activity`` shows their COMMITs, at a random moment of
the delay, the server is restarted with ``pg_ctl restart -m immediate`` (a crash: what
was not flushed is gone), and another client commits a few transactions as soon as it is
back — they take the transaction ids the lost ones had, so asking "did transaction N
commit?" would answer for them. Whatever the timing, a write returns with its row in the
database, or raises a typed :class:`~agentnb.errors.StoreError` with nothing written, and
a retry does it once.
"""

from __future__ import annotations

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
from agentnb.examples import build_refund_workflow
from agentnb.testing import ThrowawayPostgres
from tests.conftest import schema_dsn, throwaway_cluster

WORKER = Path(__file__).with_name("commit_worker.py")
ROOT = Path(__file__).parents[2]
CRASHES = 20
"""Crashes during an approval's COMMIT, and during a step's, the test goes through."""
ATTEMPTS = 150
"""Rounds tried at most to get them (a round in which the writes are done before a COMMIT
is seen costs no crash, a few tenths of a second: more of them on loaded cores)."""
SERVER = {
    "commit_delay": "100000",  # 0.1 s between a COMMIT's WAL record and its flush ...
    "commit_siblings": "0",  # ... for every commit, however few others are running
    "wal_writer_delay": "10s",  # nor does the WAL writer flush it meanwhile
}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[ThrowawayPostgres]:
    """A server of this module's own, fsync on (``commit_delay`` needs it): its tests crash it."""
    yield from throwaway_cluster(SERVER)


@pytest.fixture
def dsn(server: ThrowawayPostgres) -> str:
    return schema_dsn(server, "c")


class Writer:
    """The worker process: commands in, one JSON answer per command out."""

    def __init__(self, dsn: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), dsn, *args],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._answers: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        ready = self.answer()
        assert ready["ready"], ready
        self.pid = int(ready["pid"])
        """The backend pid of the process's connection (each answer gives it anew)."""

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
def writers(dsn: str) -> Iterator[tuple[Writer, Writer]]:
    """Two processes: one approves, one commits steps."""
    approver = Writer(dsn)
    try:
        stepper = Writer(dsn, "steps")
        try:
            yield approver, stepper
        finally:
            stepper.close()
    finally:
        approver.close()


def _committing(admin: psycopg.Connection[Any], pids: list[int]) -> set[int]:
    """Those of ``pids`` in a COMMIT (a transaction's, or the implicit one of the
    one-statement step)."""
    rows = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s) AND state = 'active' "
        "AND (query LIKE '%%COMMIT' OR query LIKE 'INSERT INTO entries%%')",
        (pids,),
    ).fetchall()
    return {pid for (pid,) in rows}


def _take_the_lost_ids(server: ThrowawayPostgres) -> None:
    """Another client commits a few transactions as soon as the server is back."""
    with psycopg.connect(server.dsn(), autocommit=True) as other:
        other.execute("SET synchronous_commit = off")
        other.execute("CREATE TABLE IF NOT EXISTS public.other (n integer)")
        for n in range(8):
            other.execute("INSERT INTO public.other VALUES (%s)", (n,))


def crash_in_commits(
    server: ThrowawayPostgres, sent: dict[Writer, tuple[str, int]]
) -> tuple[set[Writer], dict[Writer, dict[str, Any]]]:
    """Send each writer its command (each on its connection, the backend pid given), and
    crash the server at a random moment of a COMMIT: the writers still in theirs just
    before the crash are returned with the answers. None when every write was done before
    a COMMIT of theirs was seen: such a round costs no restart, the next one tries again.
    Waiting for a COMMIT of either (not of both at once) keeps the test going on loaded
    cores, where the two processes rarely reach theirs within one delay of each other."""
    for writer, (command, _) in sent.items():
        writer.send(command)
    pids = {pid: writer for writer, (_, pid) in sent.items()}
    deadline = time.monotonic() + 30
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        while not _committing(admin, list(pids)):
            if any(writer.answered() for writer in sent):
                break
            assert time.monotonic() < deadline, f"{sent} never reached their COMMITs"
            time.sleep(0.002)
        time.sleep(random.uniform(0.0, 0.06))  # the random moment of the COMMITs' delay
        cut = {pids[pid] for pid in _committing(admin, list(pids))}
    if not cut:
        return cut, {writer: writer.answer() for writer in sent}
    server.restart("immediate")
    _take_the_lost_ids(server)
    return cut, {writer: writer.answer() for writer in sent}


def _rows(dsn: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def _typed(answer: dict[str, Any]) -> None:
    assert answer["typed"], (
        f"an untyped error escaped: {answer['error']}: {answer['message']}\n{answer['where']}"
    )


def _decided(dsn: str, run_id: str) -> list[tuple[Any, ...]]:
    return _rows(dsn, "SELECT id FROM decisions WHERE run_id = %s AND accepted = 1", run_id)


def _steps(dsn: str) -> list[int]:
    return [
        s for (s,) in _rows(dsn, "SELECT step FROM entries WHERE run_id = 'steps' ORDER BY seq")
    ]


def check_approval(dsn: str, writer: Writer, run_id: str, answer: dict[str, Any]) -> int:
    """The approval's answer against the database; its connection's backend pid now."""
    (status,) = _rows(dsn, "SELECT status FROM runs WHERE run_id = %s", run_id)[0]
    if answer["ok"]:
        assert _decided(dsn, run_id) == [(answer["id"],)], f"approve() returned {answer}"
        assert status == "approved"
        return int(answer["pid"])
    _typed(answer)
    assert _decided(dsn, run_id) == [], f"{answer['error']} raised, yet the decision was written"
    assert status == "pending"
    writer.send(f"approve {run_id}")  # the retry decides it, once
    again = writer.answer()
    assert again["ok"], again
    assert _decided(dsn, run_id) == [(again["id"],)]
    return int(again["pid"])


def check_step(dsn: str, writer: Writer, n: int, status: str, answer: dict[str, Any]) -> int:
    """Step ``n``'s answer against the database; its connection's backend pid now."""
    if answer["ok"]:
        assert _steps(dsn) == list(range(n + 1)), f"step {n} returned, not in {_steps(dsn)}"
    else:
        _typed(answer)
        assert _steps(dsn) == list(range(n)), f"{answer['error']} raised, yet step {n} is written"
        writer.send(f"step {n} {status}")  # the retry writes it, once
        answer = writer.answer()
        assert answer["ok"], answer
        assert _steps(dsn) == list(range(n + 1))
    assert _rows(dsn, "SELECT status FROM runs WHERE run_id = 'steps'") == [(status,)]
    return int(answer["pid"])


STATUSES = ("pending", "running", "running")
"""Step n's status is ``STATUSES[n % 3]``: a pause (the shared transaction), a step after
it (shared too: the run's status changes), a plain step after that (the one-statement step)."""


def test_approvals_and_steps_cut_off_in_their_commit_by_a_crash_say_what_the_database_holds(
    server: ThrowawayPostgres, dsn: str, writers: tuple[Writer, Writer]
) -> None:
    approver, stepper = writers
    with PostgresCheckpointer(dsn, synchronous_commit="off") as store:
        wf = build_refund_workflow(store)
        run_ids = []
        for _ in range(ATTEMPTS):
            run = wf.start({"requested": 1000})
            run.run()
            run_ids.append(run.run_id)
    pids = {approver: approver.pid, stepper: stepper.pid}
    crashes = {approver: 0, stepper: 0}
    for n, run_id in enumerate(run_ids, start=1):
        status = STATUSES[n % len(STATUSES)]
        cut, answers = crash_in_commits(
            server,
            {
                approver: (f"approve {run_id}", pids[approver]),
                stepper: (f"step {n} {status}", pids[stepper]),
            },
        )
        for writer in cut:
            crashes[writer] += 1
        pids[approver] = check_approval(dsn, approver, run_id, answers[approver])
        pids[stepper] = check_step(dsn, stepper, n, status, answers[stepper])
        if min(crashes.values()) >= CRASHES:
            break
    assert min(crashes.values()) >= CRASHES, (
        f"{crashes[approver]} approvals and {crashes[stepper]} steps cut off in their COMMIT "
        f"in {ATTEMPTS} rounds"
    )
