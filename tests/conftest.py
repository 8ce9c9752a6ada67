"""Shared fixtures: every checkpointer backend, and sync/async driving of runs."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import HealthCheck, settings

from agentnb import (
    Checkpointer,
    MemoryCheckpointer,
    PostgresCheckpointer,
    Run,
    SqliteCheckpointer,
    StepResult,
)
from agentnb._aio import run_sync
from agentnb.errors import MissingDependency, StoreUnavailable
from agentnb.testing import ThrowawayPostgres
from tests.processes import reap
from tests.values import refusing_reassignment

# Hypothesis's timing checks (an example's deadline, "input generation is slow") measure
# the machine's load, not the code: make test must pass with both cores busy. Its checks of
# what is generated stay on.
settings.register_profile("agentnb", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("agentnb")

BACKENDS = ["memory", "sqlite", "postgres", "postgres-pool"]
"""``postgres-pool``: the PostgreSQL store with a pool of connections (``connections=3``),
each call on one it holds, as a worker driving runs concurrently has it."""


@pytest.fixture(scope="session", autouse=True)
def records_are_values() -> Iterator[None]:
    """Every test runs with the unfrozen records refusing a second assignment of a field
    (see tests/values.py): the runtime treats them as values, and this keeps it so."""
    with refusing_reassignment():
        yield


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs the PostgreSQL server ``postgres``: it asks for the server
    (``pg_dsn``, ``pg_cluster``, ``dsn``) or is a PostgreSQL variant of a backend-parametrized
    test. ``make check`` leaves them out; ``make test`` runs them.

    And keep on one worker what must run together under ``--dist loadgroup`` (make test):
    a notebook's cells (nbval runs them in order in one kernel) and a browser or lite
    module's tests (they share its page, its Chromium or its Pyodide). xdist hands out the
    largest groups first, so these long units start early and the single tests even out
    the end."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        variants = callspec.params.values() if callspec else ()
        asks = {"pg_dsn", "pg_cluster", "dsn"} & set(getattr(item, "fixturenames", ()))
        if asks or any(isinstance(v, str) and v.startswith("postgres") for v in variants):
            item.add_marker(pytest.mark.postgres)
        together = item.get_closest_marker("browser") or item.get_closest_marker("lite")
        if together or item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(autouse=True)
def reaped() -> Iterator[None]:
    """Every process a test put in ``tests.processes.SPAWNED`` is gone after it."""
    yield
    reap()


def make_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Checkpointer:
    if kind == "memory":
        return MemoryCheckpointer()
    if kind == "sqlite":
        return SqliteCheckpointer(tmp_path / "runs.sqlite3")
    if kind == "postgres":
        return PostgresCheckpointer(request.getfixturevalue("pg_dsn"))
    if kind == "postgres-pool":
        return PostgresCheckpointer(request.getfixturevalue("pg_dsn"), connections=3)
    raise AssertionError(kind)


@pytest.fixture(params=BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, store_face: str
) -> Iterator[Checkpointer]:
    """Each checkpointer backend in turn: the contract suite runs against all of them."""
    with make_store(request.param, tmp_path, request) as s:
        yield async_face(s) if store_face == "async" else s


@pytest.fixture
def store_face() -> str:
    """How tests reach the store: ``"sync"``; a module that defines its own ``store_face``
    fixture with ``"async"`` too runs each test again through the awaitable twins."""
    return "sync"


TWINS = tuple(
    name[1:]
    for name in dir(Checkpointer)  # the contract's own and what it inherits (store.driving)
    if name.startswith("a")
    and asyncio.iscoroutinefunction(getattr(Checkpointer, name))
    and hasattr(Checkpointer, name[1:])
)
"""The contract methods with an awaitable twin (``a`` + name) the driver and Worker await."""

_in_twin: contextvars.ContextVar[bool] = contextvars.ContextVar("in_twin", default=False)


def _through_twin(name: str, sync: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(sync)
    def call(self: Checkpointer, *args: Any, **kwargs: Any) -> Any:
        if _in_twin.get():  # the twin's offload calling the real method
            return sync(self, *args, **kwargs)
        return run_sync(getattr(self, "a" + name)(*args, **kwargs))

    return call


def async_face(store: Checkpointer) -> Checkpointer:
    """The same store, its twinned methods answering through their awaitable twins.

    Every sync call of a :data:`TWINS` method (from a test, a Run, the driver) runs the
    twin on a loop; the twin's :meth:`~Checkpointer.offload` reaches the real method (in a
    worker thread: the memory store too is made ``blocking`` here, so its lock is what
    keeps it consistent). The contract suite runs unchanged through it."""
    base = type(store)

    async def offload(self: Checkpointer, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        token = _in_twin.set(True)  # to_thread copies the context: the thread sees it
        try:
            return await base.offload(self, fn, *args, **kwargs)
        finally:
            _in_twin.reset(token)

    namespace: dict[str, Any] = {name: _through_twin(name, getattr(base, name)) for name in TWINS}
    namespace.update(offload=offload, blocking=True)
    store.__class__ = type("Async" + base.__name__, (base,), namespace)
    return store


def server_missing(reason: str, environ: Mapping[str, str] = os.environ) -> NoReturn:
    """No PostgreSQL for the tests: in CI (``CI=true``) that fails the run, never skips."""
    if environ.get("CI", "").lower() == "true":
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[ThrowawayPostgres]:
    """A throwaway PostgreSQL server for the whole session (agentnb.testing), removed
    at the end. ``fsync=off``: the tests cut connections and kill clients, never the
    machine, and the cluster is deleted afterwards."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        server_missing('psycopg is not installed (pip install -e ".[dev]")')
    yield from throwaway_cluster({"fsync": "off", "full_page_writes": "off"})


def throwaway_cluster(settings: dict[str, str]) -> Iterator[ThrowawayPostgres]:
    """A fixture's body: a throwaway PostgreSQL server with ``settings``, removed after."""
    try:
        cluster = ThrowawayPostgres(settings=settings)
    except (MissingDependency, StoreUnavailable) as exc:
        server_missing(str(exc))
    try:
        yield cluster
    finally:
        cluster.remove()


_SCHEMAS = itertools.count(1)


def schema_dsn(cluster: ThrowawayPostgres, prefix: str = "t") -> str:
    """A DSN of a new empty schema on ``cluster`` (the first on its ``search_path``)."""
    import psycopg

    schema = f"{prefix}{os.getpid()}_{next(_SCHEMAS)}"
    with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return cluster.dsn(options=f"-csearch_path%3D{schema}")


@pytest.fixture
def pg_dsn(pg_cluster: ThrowawayPostgres) -> str:
    """A DSN of an empty schema of its own (the first on its ``search_path``)."""
    return schema_dsn(pg_cluster)


class Driver:
    """Drive a run through its sync methods or through their async twins."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def step(self, run: Run) -> StepResult:
        return run.step() if self.mode == "sync" else asyncio.run(run.astep())

    def run(self, run: Run) -> Run:
        return run.run() if self.mode == "sync" else asyncio.run(run.arun())

    def stream(self, run: Run) -> list[Any]:
        if self.mode == "sync":
            return list(run.stream())

        async def collect() -> list[Any]:
            return [e async for e in run.astream()]

        return asyncio.run(collect())


@pytest.fixture(params=["sync", "async"])
def drive(request: pytest.FixtureRequest) -> Driver:
    """Every runtime behaviour is checked through the sync API and the async one."""
    return Driver(request.param)


WORKERS_PARITY: Counter[str] = Counter()
"""The differential suite's tallies sent by pytest-xdist workers, summed (controller side)."""


def _parity_tally() -> Counter[str] | None:
    """This process's differential-suite tally, when the suite ran here."""
    import sys

    module = sys.modules.get("tests.graph.parity")
    return module.TALLY if module is not None and module.TALLY["graphs"] else None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A pytest-xdist worker sends its tally to the controller, which prints the figure."""
    tally = _parity_tally()
    if tally is not None and hasattr(session.config, "workeroutput"):
        session.config.workeroutput["parity"] = dict(tally)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    WORKERS_PARITY.update(getattr(node, "workeroutput", {}).get("parity", {}))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The differential suite's agreement figure, when it ran (see test_langgraph_parity):
    this process's tally, or the sum of the workers'."""
    tally = _parity_tally() or WORKERS_PARITY
    if tally["graphs"]:
        from tests.graph.parity import summary

        terminalreporter.write_line(summary(tally))
