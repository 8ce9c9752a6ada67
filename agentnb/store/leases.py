"""Lease owners: who holds a run, and whether that process is still alive.

A lease names its owner ``host:pid:random``; a restarted kernel recognises a dead owner on
its own host and takes its run over at once instead of waiting for the lease to expire.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_LEASE_SECONDS", "new_owner", "owner_is_dead"]

DEFAULT_LEASE_SECONDS = 30.0
"""How long a lease lasts unless renewed (a worker's heartbeat renews it)."""

_HOST = os.uname().nodename


def new_owner() -> str:
    """A lease owner id: ``host:pid:random`` (host and pid let a dead owner be recognised)."""
    return f"{_HOST}:{os.getpid()}:{os.urandom(4).hex()}"


def owner_is_dead(owner: str | None) -> bool:
    """True when ``owner`` names a process on this host that no longer exists.

    Lets a restarted kernel take over its own run at once instead of waiting for the lease
    to expire. Owners on other hosts are only ever released by expiry.
    """
    if not owner:
        return True
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != _HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False
