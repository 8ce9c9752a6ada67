"""A throwaway PostgreSQL cluster for the tests and the benchmarks.

``Cluster.create()`` runs ``initdb`` in a new temporary directory, starts the server on a
free port bound to 127.0.0.1 (and a unix socket inside that directory), and ``remove()``
stops it and deletes the directory. PostgreSQL refuses to run as root, so when we are root
the server runs as Debian's ``postgres`` user (through ``runuser``), owning only that
directory. Password authentication is on for TCP (scram-sha-256), so a wrong password is
refused as it would be on a real server.

Nothing here sleeps: ``pg_ctl -w`` waits until the server accepts connections (with a
deadline of its own), and stops wait until it has gone.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PASSWORD", "USER", "Cluster", "ServerMissing", "find_bindir"]

USER = "agentnb"
PASSWORD = "agentnb-test-secret"
UNPRIVILEGED = "postgres"
"""The account the server runs as when we are root (Debian's package creates it)."""
START_SECONDS = 60


class ServerMissing(RuntimeError):
    """PostgreSQL's server binaries are not installed (or cannot be run here)."""


def find_bindir() -> Path:
    """Where ``initdb``, ``pg_ctl`` and ``postgres`` are: ``$PG_BINDIR``, Debian's versioned
    directory (newest first), or ``$PATH``."""
    candidates = [os.environ.get("PG_BINDIR", "")]
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    )
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).parent))
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    raise ServerMissing(
        "PostgreSQL's server is not installed (no initdb found in $PG_BINDIR, "
        "/usr/lib/postgresql/*/bin or $PATH); install it with "
        "'sudo apt-get install postgresql' (make test does this when run as root)"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Cluster:
    """One running server in its own directory; see the module docstring."""

    bindir: Path
    root: Path
    port: int
    as_user: str | None

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @classmethod
    def create(cls, *, settings: dict[str, str] | None = None) -> Cluster:
        """Initialise and start a new cluster; raises :class:`ServerMissing` or
        :class:`subprocess.CalledProcessError` (with initdb's or pg_ctl's output)."""
        bindir = find_bindir()
        as_user = UNPRIVILEGED if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="agentnb-pg-"))
        cluster = cls(bindir, root, _free_port(), as_user)
        try:
            cluster._init(settings or {})
            cluster.start()
        except BaseException:
            cluster.remove()
            raise
        return cluster

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", self.as_user, "--"] if self.as_user else []
        return subprocess.run(
            [*prefix, *args], check=True, capture_output=True, text=True, timeout=120
        )

    def _init(self, settings: dict[str, str]) -> None:
        self.socket_dir.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(PASSWORD + "\n")
        if self.as_user:
            shutil.chown(self.root, self.as_user)
            shutil.chown(self.socket_dir, self.as_user)
            shutil.chown(pwfile, self.as_user)
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            "--pwfile",
            str(pwfile),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--no-instructions",
        )
        lines = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "max_connections": "200",
            **settings,
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in lines.items())

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-w",
            "-t",
            str(START_SECONDS),
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server and wait until it has (``-m fast``: end sessions, no wait)."""
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart -m MODE``: every connection is cut; the server comes back."""
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-m",
            mode,
            "-w",
            "-t",
            str(START_SECONDS),
            "restart",
        )

    def dsn(self, dbname: str = "postgres", *, password: str = PASSWORD, **options: str) -> str:
        """A ``postgresql://`` URL for ``dbname`` over TCP on 127.0.0.1."""
        url = f"postgresql://{USER}:{password}@127.0.0.1:{self.port}/{dbname}"
        if options:
            url += "?" + "&".join(f"{k}={v}" for k, v in options.items())
        return url

    def remove(self) -> None:
        """Stop the server (if running) and delete its directory."""
        if (self.data / "postmaster.pid").exists():
            # Already gone is fine: the directory is removed below either way.
            with contextlib.suppress(subprocess.CalledProcessError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
