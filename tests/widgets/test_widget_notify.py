"""Live panels and idle workers on PostgreSQL are woken by ``NOTIFY``, not by polling.

Another process's step or transition reaches a panel that polls once a minute; the
listening connection terminated by the server is replaced and later steps still arrive;
a run nobody watches is never announced (its steps send no ``NOTIFY``); one listening
connection serves the store's panels and its Worker. The other process:
tests/widgets/pg_stepper.py.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_stepper import chain, lights
from widget_support import Recorder, run_async, until

from agentnb import PostgresCheckpointer, Status, Worker
from agentnb.errors import StoreUnavailable
from agentnb.store.postgres_listener import CHANGES, machine_topic, run_topic
from agentnb.store.postgres_locks import WATCHED, run_lock
from agentnb.store.watch import Watch
from agentnb.testing import ThrowawayPostgres
from agentnb.widgets import MachineView, RunView
from tests.processes import ROOT, python

STEPPER = Path(__file__).with_name("pg_stepper.py")
MINUTE = 60.0  # the panels' poll interval: far beyond every wait below
WAIT = 30.0  # how long a wait for a condition may take before the test fails

pytestmark = pytest.mark.slow


class Stepper:
    """pg_stepper.py in a process of its own: one command, one answer once committed."""

    def __init__(self, dsn: str, key: str) -> None:
        self.key = key
        path = os.pathsep.join([str(ROOT), str(STEPPER.parent)])
        self.proc = python(STEPPER, dsn, key, stdin=True, PYTHONPATH=path)
        assert self.read() == "ready"

    def read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()  # blocks until it answers (or exits)
        if not line:
            _, err = self.proc.communicate(timeout=30)
            pytest.fail(f"the other process ended: {err}")
        return line

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        _, err = self.proc.communicate(timeout=30)  # closes stdin: the process ends
        assert self.proc.returncode == 0, err


@pytest.fixture
def store(pg_dsn: str) -> Iterator[PostgresCheckpointer]:
    with PostgresCheckpointer(pg_dsn) as s:
        yield s


@pytest.fixture
def other(pg_dsn: str, request: pytest.FixtureRequest) -> Iterator[Stepper]:
    stepper = Stepper(pg_dsn, request.node.name)
    try:
        yield stepper
    finally:
        stepper.close()


def test_a_panel_polling_once_a_minute_sees_each_step_another_process_makes(
    store: PostgresCheckpointer, other: Stepper
) -> None:
    run = chain(store).start({}, run_id=other.key)

    async def main() -> None:
        view = RunView(run, poll_interval=MINUTE)
        Recorder(view).hello()  # a browser view is open: the panel would poll (once a minute)
        await until(view._relay.announced, WAIT, "the panel's watch to be live")
        for n in (1, 2, 3):
            assert other.ask("step") == f"stepped {n}"
            await until(lambda n=n: view.step == n, WAIT, f"step {n} in the panel")
        assert view.state == {"done": ["n0", "n1", "n2"]}
        view.close()  # its watch ends with it: the run's steps are not announced any more
        topic = run_topic(run.run_id)
        await until(lambda: not store.listener.holds(topic), WAIT, "the watch to be let go")

    run_async(main)


def test_a_panel_polling_once_a_minute_sees_an_agentnb_worker_finish_a_submitted_run(
    store: PostgresCheckpointer, pg_dsn: str
) -> None:
    run = chain(store).submit({})

    async def main() -> None:
        view = RunView(run, poll_interval=MINUTE)
        Recorder(view).hello()
        await until(view._relay.announced, WAIT, "the panel's watch to be live")
        assert view.status == "queued"
        target = "tests.widgets.pg_stepper:chain"
        worker = python(
            "-m", "agentnb", "worker", "--db", pg_dsn, "--workflow", target, "--until-idle"
        )
        await until(lambda: view.status == "completed", WAIT, "the worker's run in the panel")
        assert view.state == {"done": ["n0", "n1", "n2", "n3"]}
        out, err = worker.communicate(timeout=WAIT)
        assert worker.returncode == 0, err
        assert "1 completed" in out
        view.close()

    run_async(main)


def test_a_terminated_listening_connection_is_replaced_and_later_steps_still_arrive(
    store: PostgresCheckpointer, other: Stepper, pg_cluster: ThrowawayPostgres
) -> None:
    run = chain(store).start({}, run_id=other.key)

    async def main() -> None:
        view = RunView(run, poll_interval=MINUTE)
        Recorder(view).hello()
        listener = store.listener
        await until(view._relay.announced, WAIT, "the panel's watch to be live")
        assert other.ask("step") == "stepped 1"
        await until(lambda: view.step == 1, WAIT, "step 1 in the panel")
        first = listener.backend_pid
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        await until(lambda: listener.connects == 2, WAIT, "the listener to reconnect")
        await until(view._relay.announced, WAIT, "the watch to be live again")
        assert listener.backend_pid != first
        for n in (2, 3):
            assert other.ask("step") == f"stepped {n}"
            await until(lambda n=n: view.step == n, WAIT, f"step {n} in the panel")
        view.close()

    run_async(main)


def test_while_the_listening_connection_is_lost_the_panel_polls_the_store(
    store: PostgresCheckpointer,
    other: Stepper,
    pg_cluster: ThrowawayPostgres,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = chain(store).start({}, run_id=other.key)

    async def main() -> None:
        view = RunView(run, poll_interval=0.05)
        Recorder(view).hello()
        listener = store.listener
        await until(view._relay.announced, WAIT, "the panel's watch to be live")
        reconnect = listener._connect

        def refused() -> psycopg.Connection[Any]:
            raise StoreUnavailable(store.dsn, "the test refuses it", "wait for the test")

        monkeypatch.setattr(listener, "_connect", refused)
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (listener.backend_pid,))
        await until(lambda: not view._relay.announced(), WAIT, "the watch to stop being live")
        # Nothing announces this step: only the panel's polling can find it.
        assert other.ask("step") == "stepped 1"
        await until(lambda: view.step == 1, WAIT, "step 1 in the polling panel")
        assert not view._relay.announced()
        assert listener.connects == 1
        monkeypatch.setattr(listener, "_connect", reconnect)
        await until(view._relay.announced, WAIT, "the watch to be live again")
        assert other.ask("step") == "stepped 2"
        await until(lambda: view.step == 2, WAIT, "step 2 in the panel")
        view.close()

    run_async(main)


def test_a_machine_panel_sees_the_transitions_another_process_commits(
    store: PostgresCheckpointer, other: Stepper
) -> None:
    light = lights().start(other.key, store=store)

    async def main() -> None:
        view = MachineView(light, poll_interval=MINUTE)
        Recorder(view).hello()
        await until(view._relay.announced, WAIT, "the panel's watch to be live")
        for event, state in (("go", "green"), ("stop", "red"), ("go", "green")):
            assert other.ask(f"send {event}") == f"sent {state}"
            await until(lambda s=state: view.state == s, WAIT, f"{state} in the panel")
        assert view.seq == 3
        view.close()

    run_async(main)


def heard_until_now(ear: psycopg.Connection[object]) -> set[str]:
    """The topics announced to ``ear`` by the commits made so far: a sentinel notification
    sent now arrives after every one of them (notifications come in commit order)."""
    ear.execute(f"NOTIFY {CHANGES}, 'sentinel'")
    heard: set[str] = set()
    for note in ear.notifies(timeout=WAIT):
        if note.payload == "sentinel":
            return heard
        heard.add(note.payload)
    raise AssertionError(f"the sentinel notification never arrived; heard {heard}")


def wait_live(watch: Watch) -> None:
    deadline = time.monotonic() + WAIT
    while not watch.live:  # the listener takes the watch's lock on its own thread
        assert time.monotonic() < deadline, "the watch never became live"
        time.sleep(0.01)


def test_only_watched_runs_and_instances_are_announced(
    store: PostgresCheckpointer, pg_cluster: ThrowawayPostgres
) -> None:
    workflow = chain(store)
    unwatched, watched = workflow.start({}), workflow.start({})
    light = lights().start("unwatched-light", store=store)
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as ear:
        ear.execute(f"LISTEN {CHANGES}")
        watch = store.watch(watched.run_id, lambda: None)
        wait_live(watch)
        unwatched.step()
        light.send("go")
        watched.step()
        assert heard_until_now(ear) == {run_topic(watched.run_id)}
        watch.close()
        deadline = time.monotonic() + WAIT
        while store.listener.holds(run_topic(watched.run_id)):
            assert time.monotonic() < deadline, "the closed watch kept its lock"
            time.sleep(0.01)
        machine_watch = store.machines.watch(light.id, lambda: None)  # type: ignore[attr-defined]
        wait_live(machine_watch)
        watched.step()  # nobody watches it any more
        light.send("stop")
        assert heard_until_now(ear) == {machine_topic(light.id)}
        machine_watch.close()


def test_a_subgraphs_run_is_announced_to_its_roots_panel() -> None:
    assert run_topic("refund/review@3") == run_topic("refund") == "run:refund"
    assert run_topic("refund/review@3/check@1") == "run:refund"


def test_an_idle_worker_polling_once_a_minute_wakes_for_a_run_submitted_elsewhere(
    store: PostgresCheckpointer, pg_dsn: str
) -> None:
    workflow = chain(store)
    worker = Worker(workflow, store=store, poll_min=MINUTE, poll_max=MINUTE)
    panel = store.watch("some-run", lambda: None)  # the panels' connection is the worker's

    async def main() -> None:
        import asyncio

        working = asyncio.ensure_future(worker.arun())
        try:
            await until(lambda: panel.live, WAIT, "the listener to listen")
            with PostgresCheckpointer(pg_dsn) as elsewhere:
                submitted = chain(elsewhere).submit({})
                await until(
                    lambda: elsewhere.get_run(submitted.run_id).status == Status.COMPLETED,
                    WAIT,
                    "the worker to run the submitted run",
                )
            assert store.listener.connects == 1  # one connection listened for both
        finally:
            worker.stop()
            await working
        panel.close()

    run_async(main)


def test_closing_the_store_stops_its_listening_thread(pg_dsn: str) -> None:
    store = PostgresCheckpointer(pg_dsn)
    listener = store.listener
    watch = store.watch("some-run", lambda: None)
    wait_live(watch)
    store.close()
    assert not listener.running
    assert not watch.live
    watch.close()  # after the store: harmless


def test_a_run_id_with_quotes_and_backslashes_is_announced_as_it_is(
    store: PostgresCheckpointer, pg_cluster: ThrowawayPostgres
) -> None:
    run = chain(store).start({}, run_id="o'brien\\'; SELECT 1; --")
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as ear:
        ear.execute(f"LISTEN {CHANGES}")
        watch = store.watch(run.run_id, lambda: None)
        wait_live(watch)
        run.step()
        assert heard_until_now(ear) == {run_topic(run.run_id)}
        watch.close()
    assert run.state == {"done": ["n0"]}


def test_a_writer_stuck_in_its_transaction_delays_only_its_own_runs_watch(
    store: PostgresCheckpointer, pg_dsn: str
) -> None:
    workflow = chain(store)
    stuck, other = workflow.start({}), workflow.start({})
    with psycopg.connect(pg_dsn, autocommit=True) as writer:
        # What a writer's BEGIN holds on a run nobody watched yet (its probe succeeded).
        writer.execute("BEGIN")
        key = run_lock(run_topic(stuck.run_id))
        writer.execute("SELECT pg_advisory_xact_lock(%s, %s)", (WATCHED, key))
        held = store.watch(stuck.run_id, lambda: None)
        woken: list[str] = []
        free = store.watch(other.run_id, lambda: woken.append("woken"))
        wait_live(free)  # not held up behind the stuck writer's key
        assert not held.live  # its panel polls meanwhile
        other.step()
        deadline = time.monotonic() + WAIT
        while len(woken) < 2:  # live, then the step's announcement
            assert time.monotonic() < deadline, "the free watch heard nothing"
            time.sleep(0.01)
        writer.execute("COMMIT")
        wait_live(held)
    held.close()
    free.close()


def test_a_plain_step_is_announced_and_taking_a_lease_is_not(
    store: PostgresCheckpointer, pg_cluster: ThrowawayPostgres
) -> None:
    from tests.store.test_postgres import new_run, step

    new_run(store, "plain-run")
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as ear:
        ear.execute(f"LISTEN {CHANGES}")
        watch = store.watch("plain-run", lambda: None)
        wait_live(watch)
        fence = store.acquire("plain-run", "worker-1").fence
        assert heard_until_now(ear) == set()  # a lease changes nothing a panel shows
        step(store, "plain-run", fence, 1)  # the one-statement step, no BEGIN of its own
        assert heard_until_now(ear) == {run_topic("plain-run")}
        watch.close()
    assert store.checkpoint("plain-run").state == {"n": 1}
