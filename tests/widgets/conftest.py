"""Fixtures for the widget tests: a SQLite store in a temporary directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentnb import SqliteCheckpointer


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.sqlite3"


@pytest.fixture
def store(db_path: Path) -> Iterator[SqliteCheckpointer]:
    """A file-backed store, so another process (the CLI) can decide runs in it."""
    with SqliteCheckpointer(db_path) as s:
        yield s
