"""Jupyter kernels for the tests, talking over Unix sockets instead of TCP ports.

A kernel started the default way is handed five TCP ports that were free a moment before it
binds them. With three workers starting kernels, PostgreSQL servers and browsers side by
side, another process can take one in between (any outgoing connection's ephemeral port is
drawn from the same range), and the kernel dies or never answers: nbval reported "Kernel
didn't respond in 60 seconds" on a quiet machine (treebeardtech/nbmake#129 is the same
race). A socket file of the kernel's own, under a fresh directory, cannot be taken.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager
from traitlets.config import Config


def ipc_config() -> Config:
    """Configuration for one kernel's manager (a ``NotebookClient``'s too): socket files of its
    own, under a fresh directory.

    The sockets' path prefix must be absolute: the default (``kernel-ipc``) is relative, and
    the kernel resolves it in its working directory (the notebook's), the client in its own.
    """
    folder = Path(tempfile.mkdtemp(prefix="agentnb-kernel-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "k")}})


def kernel_manager(kernel_name: str = "python3", **traits: Any) -> KernelManager:
    """A KernelManager (not started) configured by :func:`ipc_config`."""
    return KernelManager(kernel_name=kernel_name, config=ipc_config(), **traits)


def start_kernel(cwd: str, kernel_name: str = "python3") -> tuple[KernelManager, Any]:
    """Start a kernel (see :func:`kernel_manager`) and a client to it, once it answers."""
    km = kernel_manager(kernel_name)
    km.start_kernel(cwd=cwd)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    return km, kc
