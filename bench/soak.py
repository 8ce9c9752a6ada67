"""Soak: workers, an approver and a CLI poller on one SQLite file, then every invariant checked.

Real processes, one database::

    4 workers   start runs and drive them to the approval gate; continue approved runs
    1 approver  decides pending runs at random (the Python API, sometimes ``agentnb approve``),
                and now and then decides one twice, which must be refused
    1 poller    ``python -m agentnb runs`` / ``show`` / ``show --json`` in a loop

Each run is a chain of ``--steps`` nodes with an interrupt before the middle one, whose node
pays through ``ctx.once``. At the end: ``PRAGMA integrity_check`` is ok; every run ended as
decided (approved → completed with every node run once and one payment; rejected → rejected,
nothing after the gate); no process saw "database is locked" or failed; the WAL stayed under
``--wal-limit-mib``; each worker's RSS grew ≤ ``--rss-limit-mib`` after warm-up. Exit code
1 on any violation. The run stops by itself: a deadline kills what is left.

    python bench/soak.py --runs 5000        # the full soak
    python bench/soak.py --minutes 1        # make test: start runs for ~1 minute, then drain
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import (
    ApprovalNotPending,
    NodeContext,
    RunBusy,
    SqliteCheckpointer,
    StateGraph,
    Status,
    Workflow,
)

LOCKED = "database is locked"
IDLE = 0.02  # seconds a process with nothing to do waits before looking again


def build_workflow(store: SqliteCheckpointer, steps: int) -> Workflow:
    """A chain of ``steps`` nodes; the middle one pays, behind an interrupt."""
    gate = steps // 2 + 1
    g = StateGraph("soak")

    def plain(i: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda state: {"count": state["count"] + 1, "messages": [f"step {i}"]}

    def pay(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        paid = ctx.once("payment", lambda: {"amount": state["amount"], "to": ctx.run_id})
        return {"count": state["count"] + 1, "paid": paid, "messages": [f"step {gate}"]}

    names = [f"step{i:02d}" for i in range(1, steps + 1)]
    for i, name in enumerate(names, 1):
        g.add_node(name, pay if i == gate else plain(i))
    g.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_interrupt_before(names[gate - 1])
    return g.compile(store, max_steps=steps + 1)


def gate_of(steps: int) -> int:
    return steps // 2 + 1


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


# -- the processes ---------------------------------------------------------------------------


def worker(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed * 100 + args.index)
    created = continued = races = 0
    creating, throttled = True, False
    samples: list[tuple[int, int]] = []
    with SqliteCheckpointer(args.db) as store:
        wf = build_workflow(store, args.steps)
        while time.time() < args.deadline:
            if creating and (
                (args.quota is not None and created >= args.quota)
                or (args.create_until and time.time() >= args.create_until)
            ):
                creating = False
                emit(created_done=created)
            did = 0
            if creating and (throttled or created % 10 == 0):  # humans decide at their pace
                throttled = len(wf.runs(Status.PENDING)) >= args.backlog
            if creating and not throttled:
                run = wf.start(
                    {"count": 0, "amount": rng.randint(1, 900), "messages": []},
                    run_id=f"w{args.index}-{created:05d}",
                )
                last = list(run.stream())[-1]  # its status may be decided already
                if last.type != "interrupted":
                    emit(error=f"{run.run_id} stopped with {last.type} before the gate")
                    return 1
                created += 1
                did = 1
            approved = wf.runs(Status.APPROVED)
            rng.shuffle(approved)
            for record in approved[:2]:
                run = wf.attach(record.run_id)
                try:
                    ran = [e for e in run.stream() if e.type == "node_start"]
                except RunBusy:  # another worker took it first: the lease did its job
                    races += 1
                    continue
                if run.status != Status.COMPLETED:
                    emit(error=f"{run.run_id} was approved, then {run.status} after run()")
                    return 1
                continued += bool(ran)
                races += not ran  # finished by another worker between listing and leasing
                did += 1
            if did and (created + continued) % 10 == 0:
                samples.append((created + continued, rss_kib()))
            if not did:
                if not creating and Path(args.stop).exists():
                    samples.append((created + continued, rss_kib()))
                    emit(
                        summary={
                            "created": created,
                            "continued": continued,
                            "races": races,
                            "rss": samples,
                        }
                    )
                    return 0
                time.sleep(IDLE)
    emit(error="worker passed its deadline")
    return 1


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentnb", *argv], capture_output=True, text=True, timeout=120
    )


def approver(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    counts = {"api": 0, "cli": 0, "refused_twice": 0}
    with SqliteCheckpointer(args.db) as store:
        wf = build_workflow(store, args.steps)
        while time.time() < args.deadline:
            pending = wf.runs(Status.PENDING)
            if not pending:
                if Path(args.stop).exists():
                    emit(summary=counts)
                    return 0
                time.sleep(IDLE)
                continue
            rng.shuffle(pending)
            for record in pending:
                decision = "approved" if rng.random() < args.approve_ratio else "rejected"
                if rng.random() < args.cli_ratio:
                    verb = "approve" if decision == "approved" else "reject"
                    done = cli(
                        verb,
                        record.run_id,
                        "--db",
                        args.db,
                        "--as",
                        "soak-cli",
                        "--digest",
                        record.pending_digest or "",
                        "--comment",
                        "soak",
                    )
                    if done.returncode != 0:
                        emit(error=f"agentnb {verb} exited {done.returncode}: {done.stderr}")
                        return 1
                    via = "cli"
                else:
                    run = wf.attach(record.run_id)
                    decide = run.approve if decision == "approved" else run.reject
                    decide(by="soak-approver", expected_digest=record.pending_digest)
                    via = "api"
                counts[via] += 1
                emit(decided=record.run_id, decision=decision)
                if rng.random() < args.twice_ratio:
                    try:
                        wf.attach(record.run_id).approve(by="soak-second-approver")
                    except ApprovalNotPending:
                        counts["refused_twice"] += 1
                    else:
                        emit(error=f"{record.run_id} was decided twice")
                        return 1
    emit(error="approver passed its deadline")
    return 1


def poller(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed + 7)
    calls = 0
    while time.time() < args.deadline:
        if Path(args.stop).exists():
            emit(summary={"calls": calls})
            return 0
        listing = cli("runs", "--db", args.db, *(("--status", "pending") if calls % 3 else ()))
        calls += 1
        if listing.returncode != 0:
            emit(error=f"agentnb runs exited {listing.returncode}: {listing.stderr}")
            return 1
        ids = [line.split()[0] for line in listing.stdout.splitlines()[1:] if line.strip()]
        if ids and ids[0] != "no":
            run_id = rng.choice(ids)
            for extra in ((), ("--json",)):
                shown = cli("show", run_id, "--db", args.db, *extra)
                calls += 1
                if shown.returncode != 0:
                    emit(error=f"agentnb show exited {shown.returncode}: {shown.stderr}")
                    return 1
                if extra and json.loads(shown.stdout)["status"] not in set(Status):
                    emit(error=f"agentnb show --json printed no status for {run_id}")
                    return 1
    emit(error="poller passed its deadline")
    return 1


ROLES = {"worker": worker, "approver": approver, "poller": poller}


# -- checking ----------------------------------------------------------------------------------


def verify(db: str, steps: int, decided: dict[str, str], created: int) -> list[str]:
    """Every invariant the soak promises, checked on the database it left behind."""
    problems: list[str] = []
    check = sqlite3.connect(db)
    integrity = check.execute("PRAGMA integrity_check").fetchall()
    check.close()
    if integrity != [("ok",)]:
        problems.append(f"PRAGMA integrity_check: {integrity[:5]}")
    names = [f"step{i:02d}" for i in range(1, steps + 1)]
    gate = gate_of(steps)
    with SqliteCheckpointer(db) as store:
        runs = store.list_runs()
        if len(runs) != created:
            problems.append(f"{len(runs)} runs in the database, the workers started {created}")
        for run in runs:
            want = decided.get(run.run_id)
            expected = {"approved": Status.COMPLETED, "rejected": Status.REJECTED}.get(want or "")
            if expected is None:
                problems.append(f"{run.run_id}: never decided, ended {run.status}")
                continue
            if run.status != expected:
                problems.append(f"{run.run_id}: {want}, but ended {run.status}")
            events = store.events(run.run_id)
            if [e.seq for e in events] != list(range(1, len(events) + 1)):
                problems.append(f"{run.run_id}: event seqs have a gap or a duplicate")
            ran = [e.node for e in events if e.type == "node_start"]
            if ran != names[: steps if want == "approved" else gate - 1]:
                problems.append(f"{run.run_id}: {want} but ran {len(ran)} nodes: {ran[-3:]}")
            paid = [e.name for e in store.effects(run.run_id)]
            if paid != (["payment"] if want == "approved" else []):
                problems.append(f"{run.run_id}: {want} but paid {paid}")
            accepted = [d.decision for d in store.decisions(run.run_id) if d.accepted]
            if accepted != [want]:
                problems.append(f"{run.run_id}: decided {want}, the audit says {accepted}")
    return problems


def rss_growth_kib(samples: list[list[int]]) -> tuple[int, int]:
    """(RSS at the end of warm-up, the most it grew after) — warm-up is the first 20% of work."""
    if not samples:
        return 0, 0
    total = samples[-1][0]
    warm = next(i for i, (done, _) in enumerate(samples) if done >= total * 0.2)
    base = samples[warm][1]
    return base, max(rss for _, rss in samples[warm:]) - base


# -- the conductor -----------------------------------------------------------------------------


class Child:
    def __init__(self, role: str, argv: list[str], logdir: Path, index: int = 0) -> None:
        self.role, self.name = role, f"{role}{index if role == 'worker' else ''}"
        self.stderr_path = logdir / f"{self.name}.stderr"
        self.messages: list[dict[str, Any]] = []
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--role", role, "--index", str(index), *argv],
            stdout=subprocess.PIPE,
            stderr=self.stderr_path.open("w"),
            text=True,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.messages.append(json.loads(line))

    def first(self, key: str) -> Any:
        return next((m[key] for m in self.messages if key in m), None)

    def stderr(self) -> str:
        return self.stderr_path.read_text()


def conduct(args: argparse.Namespace) -> int:
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="agentnb-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db, stop = workdir / "soak.sqlite3", workdir / "stop"
    for stale in (db, stop, Path(f"{db}-wal"), Path(f"{db}-shm")):
        stale.unlink(missing_ok=True)
    SqliteCheckpointer(db).close()  # create and migrate before anyone races for it
    start = time.time()
    deadline = start + args.timeout
    create_until = start + args.minutes * 60 * 0.8 if args.minutes else 0.0
    common = [
        "--db",
        str(db),
        "--stop",
        str(stop),
        "--deadline",
        str(deadline),
        "--steps",
        str(args.steps),
        "--seed",
        str(args.seed),
    ]
    children = []
    for i in range(args.workers):
        quota = [] if args.minutes else ["--quota", str(len(range(i, args.runs, args.workers)))]
        extra = ["--create-until", str(create_until)] if args.minutes else quota
        children.append(Child("worker", [*common, *extra], workdir, i))
    decide = [
        "--approve-ratio",
        str(args.approve_ratio),
        "--cli-ratio",
        str(args.cli_ratio),
        "--twice-ratio",
        str(args.twice_ratio),
    ]
    children.append(Child("approver", [*common, *decide], workdir))
    children.append(Child("poller", common, workdir))
    workers = [c for c in children if c.role == "worker"]

    problems: list[str] = []
    wal_samples: list[int] = []
    drained_at = 0.0
    watch = sqlite3.connect(db, timeout=30)
    last_count = 0.0
    while any(c.proc.poll() is None for c in children):
        now = time.time()
        wal = Path(f"{db}-wal")
        wal_samples.append(wal.stat().st_size if wal.exists() else 0)
        failed = [c for c in children if c.proc.poll() not in (None, 0)]
        if failed:
            problems += [
                f"{c.name} exited {c.proc.returncode}: {c.first('error') or c.stderr()[-2000:]}"
                for c in failed
            ]
            break
        if now > deadline + 30:
            problems.append(f"not finished {args.timeout:.0f} s after the start")
            break
        totals = [c.first("created_done") for c in workers]
        if not drained_at and None not in totals and now - last_count >= 0.5:
            last_count = now
            (finished,) = watch.execute(
                "SELECT count(*) FROM runs WHERE status IN ('completed', 'rejected')"
            ).fetchone()
            if finished == sum(totals):
                drained_at = now
                stop.touch()
        time.sleep(0.2)
    watch.close()
    for c in children:  # a child past the deadline, or left when another failed
        if c.proc.poll() is None:
            c.proc.kill()
        c.proc.wait(timeout=30)
        c.reader.join(timeout=10)
    elapsed = (drained_at or time.time()) - start

    created = sum(c.first("created_done") or 0 for c in workers)
    approver_child = next(c for c in children if c.role == "approver")
    decided = {m["decided"]: m["decision"] for m in approver_child.messages if "decided" in m}
    locked = {
        c.name: c.stderr().count(LOCKED) + sum(LOCKED in json.dumps(m) for m in c.messages)
        for c in children
    }
    if sum(locked.values()):
        problems.append(f'"{LOCKED}" seen: {locked}')
    if not problems:
        problems += verify(str(db), args.steps, decided, created)

    approved = sum(d == "approved" for d in decided.values())
    steps_run = approved * args.steps + (len(decided) - approved) * (gate_of(args.steps) - 1)
    print(f"soak: {args.workers} workers, 1 approver, 1 CLI poller on {db}")
    print(
        f"  runs              {created} ({approved} approved, {len(decided) - approved} "
        f"rejected), {args.steps} steps each when approved, {steps_run} steps"
    )
    print(
        f"  throughput        {created / elapsed:.1f} runs/s, {steps_run / elapsed:.0f} "
        f"steps/s over {elapsed:.1f} s"
    )
    summary = approver_child.first("summary") or {}
    print(
        f"  decisions         {summary.get('api', 0)} by the API, {summary.get('cli', 0)} by "
        f"`agentnb approve/reject`, {summary.get('refused_twice', 0)} second decisions refused"
    )
    poll = next(c for c in children if c.role == "poller").first("summary") or {}
    print(f"  CLI poller        {poll.get('calls', 0)} calls of runs/show, all exit 0")
    print(f'  "{LOCKED}"  {sum(locked.values())}')
    wal_max = max(wal_samples, default=0)
    quarters = [
        wal_samples[i * len(wal_samples) // 4 : (i + 1) * len(wal_samples) // 4] or [0]
        for i in range(4)
    ]
    print(
        f"  WAL               max {wal_max / 2**20:.1f} MiB; by quarter of the soak "
        + ", ".join(f"{max(q) / 2**20:.1f}" for q in quarters)
        + f" MiB ({len(wal_samples)} samples)"
    )
    if wal_max > args.wal_limit_mib * 2**20:
        problems.append(f"the WAL reached {wal_max / 2**20:.1f} MiB (limit {args.wal_limit_mib})")
    continued = sum((c.first("summary") or {}).get("continued", 0) for c in workers)
    if not problems and continued != approved:
        problems.append(f"workers continued {continued} runs, {approved} were approved")
    for c in workers:
        s = c.first("summary") or {}
        base, growth = rss_growth_kib(s.get("rss", []))
        print(
            f"  {c.name} RSS       {base / 1024:.1f} MiB after warm-up, grew "
            f"{growth / 1024:+.2f} MiB; {s.get('created', 0)} started, "
            f"{s.get('continued', 0)} continued, {s.get('races', 0)} lost races"
        )
        if growth > args.rss_limit_mib * 1024:
            problems.append(f"{c.name} RSS grew {growth / 1024:.1f} MiB after warm-up")
    print(
        f"  integrity_check   {'ok' if not any('integrity' in p for p in problems) else 'FAILED'}"
    )
    for p in problems[:30]:
        print(f"  VIOLATION {p}")
    if len(problems) > 30:
        print(f"  ... and {len(problems) - 30} more")
    if problems:
        print(f"soak: {len(problems)} violations; the database and logs are in {workdir}")
        return 1
    if not args.dir:
        shutil.rmtree(workdir)
    print("soak: ok")
    return 0


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = p.add_mutually_exclusive_group()
    size.add_argument("--runs", type=int, default=5000, help="runs in all (default 5000)")
    size.add_argument("--minutes", type=float, help="start runs for ~80%% of this, then drain")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--approve-ratio", type=float, default=0.7)
    p.add_argument("--cli-ratio", type=float, default=0.05, help="decisions via the CLI")
    p.add_argument("--twice-ratio", type=float, default=0.02, help="runs decided a second time")
    p.add_argument("--backlog", type=int, default=200, help="pending runs before workers wait")
    p.add_argument("--timeout", type=float, help="seconds before the soak gives up")
    p.add_argument("--wal-limit-mib", type=float, default=16.0)
    p.add_argument("--rss-limit-mib", type=float, default=5.0)
    p.add_argument("--dir", help="where the database goes (default: a temporary directory)")
    # the children's arguments
    p.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    p.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    p.add_argument("--stop", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    p.add_argument("--quota", type=int, help=argparse.SUPPRESS)
    p.add_argument("--create-until", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.timeout is None:
        args.timeout = args.minutes * 60 * 3 + 60 if args.minutes else 4 * 3600
    return args


if __name__ == "__main__":
    arguments = parse()
    sys.exit(ROLES[arguments.role](arguments) if arguments.role else conduct(arguments))
