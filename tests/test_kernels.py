"""The tests' Jupyter kernels talk over socket files, never TCP ports (tests/kernels.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kernels import start_kernel

pytestmark = pytest.mark.slow


def test_a_kernel_started_elsewhere_answers_on_socket_files_at_an_absolute_path(
    tmp_path: Path,
) -> None:
    km, kc = start_kernel(cwd=str(tmp_path))  # the kernel's working directory is not ours
    try:
        info = json.loads(Path(km.connection_file).read_text())
        assert info["transport"] == "ipc"
        assert Path(info["ip"]).is_absolute()
        assert Path(f"{info['ip']}-{info['shell_port']}").is_socket()
        reply = kc.execute_interactive("import os; print(os.getcwd())", timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
