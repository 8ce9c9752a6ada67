"""Python processes of the tests' own: a helper script run beside the test, agentnb importable.

Every process test (crashes, races, another kernel's panel) starts its helper the same way
and reads its verdict the same way: the last line it prints, as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]

SPAWNED: list[subprocess.Popen[str]] = []
"""Processes a test started that must be gone after it, even when it failed early: every
test ends with :func:`reap` (``tests/conftest.py``)."""


def reap() -> None:
    """Kill and wait for every process in :data:`SPAWNED`."""
    while SPAWNED:
        proc = SPAWNED.pop()
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def python(
    script: Path | str, *args: str, stdin: bool = False, **env: str
) -> subprocess.Popen[str]:
    """``python script args...`` (``script`` may be ``"-m"``, then a module and its
    arguments) with this checkout importable (``PYTHONPATH``, unless
    ``env`` says otherwise), ``env`` added to the environment, and stdout and stderr (and,
    if asked, stdin) piped as text."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        env=environ,
        stdin=subprocess.PIPE if stdin else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(proc: subprocess.Popen[str], timeout: float = 60) -> dict[str, Any]:
    """The JSON the process printed last, once it exited 0 (its stderr if it did not)."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]
