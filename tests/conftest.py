"""Shared fixtures: every checkpointer backend, and sync/async driving of runs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentnb import Checkpointer, MemoryCheckpointer, Run, SqliteCheckpointer, StepResult

BACKENDS = ["memory", "sqlite"]


def make_store(kind: str, tmp_path: Path) -> Checkpointer:
    if kind == "memory":
        return MemoryCheckpointer()
    if kind == "sqlite":
        return SqliteCheckpointer(tmp_path / "runs.sqlite3")
    raise AssertionError(kind)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Checkpointer]:
    """Each checkpointer backend in turn: the contract suite runs against all of them."""
    with make_store(request.param, tmp_path) as s:
        yield s


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
