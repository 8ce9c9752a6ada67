"""A SQLite file the operating system refuses: read-only, damaged, on a full disk.

The tests prepare a database (:func:`prepare`), break it for real, and try every kind of
call on it (:func:`attempt`): the open, reads, a decision, a step, a new run, a statechart
event. Run as a script, this module is the process that meets the fault:

    python faults.py readonly DB IDS_JSON
        drops root's privileges (to nobody) first: root may write any file, so only
        without them is a read-only file read-only; then tries every call.
    python faults.py full DIR
        DIR is a small tmpfs of its own mount namespace (the test starts this under
        ``unshare``): prepares a database there, fills the disk from inside a node, tries
        every call, frees the space and tries again.
    python faults.py cli ARGS...
        drops root's privileges, then runs the ``agentnb`` command in this process
        (this interpreter's files may be unreadable to nobody once it has dropped them).
    python faults.py fullcli DIR held|alone ARGS...
        prepares a database in DIR (a tmpfs, as for ``full``), fills the disk, then runs
        the ``agentnb`` command, ``{db}`` and ``{pending}`` in ARGS filled in: while
        another connection holds the file open (``held``: its -shm is made), or alone.

Each prints one JSON line: what every call did, ``["ok", value]`` or ``[type, message]``.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentnb import SqliteCheckpointer, State, Statechart, StateGraph
from agentnb.examples import build_refund_workflow
from agentnb.fsm import Assign

NOBODY = 65534
HERE = Path(__file__).parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), str(HERE)])}
"""The environment of a probe: this checkout's agentnb, and this module."""


def probe(*args: str, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """``faults.py ARGS`` in a process of its own (after ``prefix``: :func:`tmpfs`)."""
    return subprocess.run(
        [*prefix, sys.executable, __file__, *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )


def verdict(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def tmpfs(folder: Path) -> list[str]:
    """The command prefix that runs a program with a 2 MiB tmpfs on ``folder``: a real
    disk that fills up, in a mount namespace of its own that takes it away when the
    program exits. Fails in CI (``CI=true``) where it cannot mount, skips elsewhere."""
    import pytest

    namespace = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:  # a user namespace lets a user mount in its own mount namespace
        namespace[1:1] = ["--user", "--map-root-user"]
    mounted = 'mount -t tmpfs -o size=2m tmpfs "$1" && shift && exec "$@"'
    command = [*namespace, "--", "sh", "-c", mounted, "sh", str(folder)]
    tried = subprocess.run([*command, "true"], capture_output=True, text=True)
    if tried.returncode != 0:
        reason = f"cannot mount a tmpfs here: {tried.stderr.strip()}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return command


def toggle() -> Statechart:
    return Statechart(
        "toggle",
        [
            State("off", on={"go": {"target": "on", "action": [Assign("n", "n + 1")]}}),
            State("on", on={"go": {"target": "off"}}),
        ],
        datamodel={"n": 0},
    )


def prepare(path: Path | str) -> dict[str, str]:
    """A database holding a pending run, a running run not yet stepped, a completed run
    and a statechart instance that has taken one event; their ids."""
    with SqliteCheckpointer(path) as store:
        wf = build_refund_workflow(store)
        pending = wf.start({"requested": 1000})
        pending.run()
        done = wf.start({"requested": 5})
        done.run()
        running = wf.start({"requested": 7})
        toggle().start("c1", store=store).send("go")
    return {"pending": pending.run_id, "done": done.run_id, "running": running.run_id}


def dump(path: Path | str, skip: tuple[str, ...] = ()) -> dict[str, list[Any]]:
    """Every row of every table but ``skip``, read without agentnb: what "nothing
    changed" compares."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            name
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if name not in skip
        ]
        return {t: sorted(map(repr, db.execute(f'SELECT * FROM "{t}"'))) for t in tables}
    finally:
        db.close()


def outcome(call: Callable[[], Any]) -> list[Any]:
    try:
        value = call()
    except Exception as exc:
        return [type(exc).__name__, str(exc)]
    return ["ok", value]


def attempt(path: str, ids: dict[str, str]) -> dict[str, list[Any]]:
    """Every kind of call on the database at ``path``: the open, reads, writes."""
    found: dict[str, list[Any]] = {}
    opened: list[SqliteCheckpointer] = []
    found["open"] = outcome(lambda: opened.append(SqliteCheckpointer(path)) or "opened")
    if not opened:
        return found
    store = opened[0]
    wf = build_refund_workflow(store)
    found["list_runs"] = outcome(lambda: len(store.list_runs()))
    found["get_run"] = outcome(lambda: str(store.get_run(ids["pending"]).status))
    found["checkpoint"] = outcome(lambda: store.checkpoint(ids["pending"]).state["amount"])
    found["events"] = outcome(lambda: len(store.events(ids["pending"])))
    found["machine_read"] = outcome(lambda: toggle().resume("c1", store=store).state)
    found["decide"] = outcome(lambda: store.decide(ids["pending"], "approved", "ada").accepted)
    found["step"] = outcome(lambda: wf.attach(ids["running"]).step().node)
    found["start"] = outcome(lambda: wf.start({"requested": 3}).run_id and "started")
    found["machine_send"] = outcome(lambda: toggle().resume("c1", store=store).send("go").target)
    store.close()
    return found


def drop_privileges() -> None:
    """Become nobody if root (root's CAP_DAC_OVERRIDE writes through any permission)."""
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)


def readonly(path: str, ids: str) -> dict[str, Any]:
    import agentnb.graph.worker
    import agentnb.identity

    agentnb.identity.current_identity()  # its lazy imports, while they can still be read
    drop_privileges()
    return {"uid": os.geteuid(), "calls": attempt(path, json.loads(ids))}


def fill_disk(path: str, filler: str) -> None:
    """Empty the WAL of the database at ``path`` (so every later write needs new space),
    then fill the disk with ``filler``."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise


def full(folder: str) -> dict[str, Any]:
    """Fill the disk from inside a node, between its step's lease and its commit."""
    path = os.path.join(folder, "runs.sqlite3")
    filler = os.path.join(folder, "filler")
    ids = prepare(path)
    runs_of_fill: list[int] = []

    def fill(state: dict[str, Any]) -> dict[str, Any]:
        runs_of_fill.append(1)
        if len(runs_of_fill) > 1:  # run again once the space is back: the disk stays free
            return {"filled": True}
        fill_disk(path, filler)
        return {"filled": True}

    with SqliteCheckpointer(path) as store:
        graph = StateGraph("filling").add_node("fill", fill).add_node("after", lambda s: None)
        wf = graph.set_entry_point("fill").add_edge("fill", "after").compile(store)
        run = wf.start({})
        result: dict[str, Any] = {"ids": ids}
        result["node_step"] = outcome(lambda: run.step().node)
        before = dump(path)
        result["full"] = attempt(path, ids)
        result["new_file"] = outcome(
            lambda: SqliteCheckpointer(os.path.join(folder, "new.sqlite3")).close()
        )
        result["unchanged"] = dump(path) == before
        result["filling_steps"] = [cp.step for cp in store.checkpoints(run.run_id)]
        os.remove(filler)
        result["freed"] = attempt(path, ids)
        # The failed step's lease is still this handle's: it retries the step.
        result["filling_after"] = outcome(lambda: str(run.run().status))
        result["filling_steps_after"] = [cp.step for cp in store.checkpoints(run.run_id)]
        result["fill_ran"] = len(runs_of_fill)
        check = sqlite3.connect(path)
        result["integrity"] = check.execute("PRAGMA integrity_check").fetchone()[0]
        check.close()
    return result


def cli(argv: list[str]) -> int:
    import agentnb.graph.questions
    import agentnb.identity
    from agentnb.cli import main

    agentnb.identity.current_identity()
    drop_privileges()
    return main(argv)


def full_cli(folder: str, held: str, argv: list[str]) -> dict[str, Any]:
    from agentnb.cli import main

    path = os.path.join(folder, "runs.sqlite3")
    filler = os.path.join(folder, "filler")
    ids = prepare(path)
    before = dump(path)
    with SqliteCheckpointer(path) if held == "held" else open(os.devnull):
        fill_disk(path, filler)
        code = main([a.format(db=path, **ids) for a in argv])
        os.remove(filler)  # (without its -shm, not even a dump reads a full disk's file)
    return {"code": code, "unchanged": dump(path) == before}


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "cli":
        sys.exit(cli(args))
    if command == "fullcli":
        print(json.dumps(full_cli(args[0], args[1], args[2:])))
        sys.exit(0)
    verdict = readonly(*args) if command == "readonly" else full(*args)
    print(json.dumps(verdict))
