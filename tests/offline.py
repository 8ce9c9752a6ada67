"""A pytest plugin: every Jupyter kernel the session starts may not reach the network.

``make nbval`` loads it (``-p tests.offline``), so the one run of the notebooks that
compares their outputs also proves they run offline: each kernel runs :data:`GUARD` first
(an IPython startup file in an ``IPYTHONDIR`` of the session's own), which refuses any
connection or name lookup that would leave this machine and writes it to a log. A test
whose kernel wrote to the log fails, naming the request — even when the notebook's code
swallowed the refusal.

It also starts nbval's kernels on socket files instead of TCP ports (tests/kernels.py says
why): nbval offers no setting for it, so its module's ``KernelManager`` is replaced for the
session.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nbval.kernel
import pytest

from tests.kernels import kernel_manager

GUARD = r"""
import os as _os
import socket as _socket

_agentnb_log = _os.environ["AGENTNB_NETWORK_LOG"]
_real_connect = _socket.socket.connect
_real_getaddrinfo = _socket.getaddrinfo


def _agentnb_local(host):
    return str(host).startswith(("127.", "::1", "localhost", "/")) or host in ("", None)


def _agentnb_refuse(what, where):
    with open(_agentnb_log, "a", encoding="utf-8") as log:
        log.write(f"{what} {where}\n")
    raise OSError("network access is not allowed in the teaching notebooks")


def _connect(self, address, *args):
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (_socket.AF_INET, _socket.AF_INET6) and not _agentnb_local(host):
        _agentnb_refuse("connect", address)
    return _real_connect(self, address, *args)


def _getaddrinfo(host, *args, **kwargs):
    if not _agentnb_local(host):
        _agentnb_refuse("lookup", host)
    return _real_getaddrinfo(host, *args, **kwargs)


_socket.socket.connect = _connect
_socket.getaddrinfo = _getaddrinfo
"""
"""Run first in every kernel: refuse and log a request that would leave 127.0.0.1."""


class Offline:
    """The session's IPython directory and request log."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="agentnb-offline-"))
        startup = self.root / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True)
        (startup / "00-offline.py").write_text(GUARD, encoding="utf-8")
        self.log = self.root / "requests.log"
        self.log.touch()
        os.environ["IPYTHONDIR"] = str(self.root / "ipython")
        os.environ["AGENTNB_NETWORK_LOG"] = str(self.log)
        self.seen = 0

    def new_requests(self) -> list[str]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        new, self.seen = lines[self.seen :], len(lines)
        return new


_OFFLINE: Offline | None = None
_NBVAL_KERNEL_MANAGER = nbval.kernel.KernelManager


def pytest_configure(config: pytest.Config) -> None:
    global _OFFLINE
    _OFFLINE = Offline()  # before any kernel starts: each one inherits the environment
    nbval.kernel.KernelManager = kernel_manager  # type: ignore[misc,assignment]


def pytest_unconfigure(config: pytest.Config) -> None:
    nbval.kernel.KernelManager = _NBVAL_KERNEL_MANAGER  # type: ignore[misc]
    if _OFFLINE is not None:
        shutil.rmtree(_OFFLINE.root, ignore_errors=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        assert _OFFLINE is not None
        if requests := _OFFLINE.new_requests():
            raise AssertionError(
                f"{item.nodeid} tried to reach the network (refused): " + "; ".join(requests)
            )
