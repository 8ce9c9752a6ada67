"""A throwaway PostgreSQL server: for teaching, for tests, for benchmarks.

:func:`throwaway_postgres` (in :mod:`agentnb.testing`) runs ``initdb`` in a new temporary
directory, starts the server on a free port bound to 127.0.0.1 (and a unix socket inside
that directory), yields a ``postgresql://`` DSN, and on exit stops the server and deletes
the directory. PostgreSQL refuses to run as root, so when we are root the server runs as
the unprivileged ``postgres`` account (Debian's package creates it, through ``runuser``),
owning only that directory. Password authentication is on for TCP (scram-sha-256, a
random password per server), so a wrong password is refused as on a real server.

Nothing here sleeps: ``pg_ctl -w`` waits until the server accepts connections (with a
deadline of its own), and a stop waits until the server has gone.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType

from agentnb.errors import MissingDependency, StoreUnavailable

__all__ = ["ThrowawayPostgres", "throwaway_postgres"]

USER = "agentnb"
UNPRIVILEGED = "postgres"
"""The account the server runs as when we are root."""
START_SECONDS = 60
INSTALL = "sudo apt-get install postgresql (or set PG_BINDIR to the folder holding initdb)"


def find_bindir() -> Path:
    """Where ``initdb`` and ``pg_ctl`` are: ``$PG_BINDIR``, Debian's versioned directory
    (newest first), or ``$PATH``.

    Raises:
        MissingDependency: none of them holds PostgreSQL's server programs.
    """
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
    raise MissingDependency(
        "PostgreSQL's server (initdb and pg_ctl in $PG_BINDIR, /usr/lib/postgresql/*/bin or $PATH)",
        "postgres",
        "a throwaway PostgreSQL server",
        install=INSTALL,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on, drawn below the ephemeral range.

    A port the kernel hands out for ``bind(0)`` comes from the range it also draws every
    outgoing connection's source port from (``net.ipv4.ip_local_port_range``, 32768-60999
    by default), so between choosing it and the server binding it (or binding it again
    after a restart) any connection may take it. Below that range only another listener
    picking the same number can. The tests' JupyterLab servers use it too.
    """
    low = _EPHEMERAL_LOW
    with contextlib.suppress(OSError, ValueError):
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(100 if low > _LOWEST_PORT + 1000 else 0):
        port = _RANDOM.randrange(_LOWEST_PORT, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    with socket.socket() as s:  # no room below the range: the kernel's choice
        s.bind(("127.0.0.1", 0))
        chosen: int = s.getsockname()[1]
        return chosen


_EPHEMERAL_LOW = 32768  # Linux's default, where /proc cannot be read
_LOWEST_PORT = 10000  # above the well-known and most registered services' ports
_RANDOM = secrets.SystemRandom()  # not `random`, which processes seeded alike draw alike


def _run_as() -> str | None:
    """The account to run the server as: none (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(UNPRIVILEGED)
    except KeyError:
        raise StoreUnavailable(
            "a throwaway PostgreSQL server",
            f"PostgreSQL refuses to run as root and there is no {UNPRIVILEGED!r} account",
            f"create one (useradd --system {UNPRIVILEGED}) or run as an unprivileged user",
        ) from None
    return UNPRIVILEGED


class ThrowawayPostgres:
    """One running PostgreSQL server in a temporary directory of its own.

    Use :func:`throwaway_postgres` for a DSN; this class is for tests that also restart
    the server or need a DSN per database or schema. As a context manager it removes the
    server on exit.

    Attributes:
        bindir: the folder of ``initdb`` and ``pg_ctl`` used.
        root: the temporary directory (data, socket, log), deleted by :meth:`remove`.
        port: the TCP port on 127.0.0.1.
        password: the password of the ``agentnb`` superuser (random per server).
        as_user: the account the server runs as, or ``None`` for the current one.

    Example:
        Needs PostgreSQL's server programs, so it is not run as a doctest here:

        >>> from agentnb import PostgresCheckpointer
        >>> from agentnb.testing import ThrowawayPostgres
        >>> with ThrowawayPostgres() as server:  # doctest: +SKIP
        ...     with PostgresCheckpointer(server.dsn()) as store:
        ...         server.restart()  # the store reconnects
    """

    def __init__(self, *, settings: Mapping[str, str] | None = None) -> None:
        """Initialise and start a server; ``settings`` are extra ``postgresql.conf`` lines.

        Raises:
            MissingDependency: PostgreSQL's server programs are not installed.
            StoreUnavailable: ``initdb`` or ``pg_ctl`` failed (their output is the reason).
        """
        self.bindir = find_bindir()
        self.as_user = _run_as()
        self.root = Path(tempfile.mkdtemp(prefix="agentnb-pg-"))
        self.port = free_port()
        self.password = secrets.token_hex(16)
        try:
            self._init(dict(settings or {}))
            self.start()
        except BaseException:
            self.remove()
            raise

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    def _run(self, *args: str) -> None:
        prefix = ["runuser", "-u", self.as_user, "--"] if self.as_user else []
        try:
            subprocess.run(
                [*prefix, *args], check=True, capture_output=True, text=True, timeout=120
            )
        except subprocess.CalledProcessError as exc:
            said = (exc.stderr or exc.stdout or "").strip().splitlines()[-3:]
            raise StoreUnavailable(
                f"the throwaway PostgreSQL server in {self.root}",
                f"{Path(args[0]).name} failed: {' '.join(said) or exc.returncode}",
                f"read {self.root / 'server.log'} if it exists; check that the server "
                f"programs in {self.bindir} run for this user",
            ) from exc

    def _init(self, settings: dict[str, str]) -> None:
        self.socket_dir.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self.as_user:
            for path in (self.root, self.socket_dir, pwfile):
                shutil.chown(path, self.as_user)
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
        pwfile.unlink()
        lines = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.socket_dir}'",
            "max_connections": "200",
            **settings,
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in lines.items())

    def _ctl(self, *args: str) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), *args)

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        self._ctl("-l", str(self.root / "server.log"), "-w", "-t", str(START_SECONDS), "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server and wait until it has (``fast``: end sessions, no waiting)."""
        self._ctl("-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart -m MODE``: every connection is cut; the server comes back."""
        log = str(self.root / "server.log")
        self._ctl("-l", log, "-m", mode, "-w", "-t", str(START_SECONDS), "restart")

    def dsn(self, dbname: str = "postgres", *, password: str | None = None, **options: str) -> str:
        """A ``postgresql://`` URL for ``dbname`` over TCP on 127.0.0.1 (``options``: its
        query string, e.g. ``options="-csearch_path%3Dmine"``)."""
        secret = self.password if password is None else password
        url = f"postgresql://{USER}:{secret}@127.0.0.1:{self.port}/{dbname}"
        if options:
            url += "?" + "&".join(f"{k}={v}" for k, v in options.items())
        return url

    @property
    def running(self) -> bool:
        """Whether the server's process is up (its ``postmaster.pid`` is there)."""
        return (self.data / "postmaster.pid").exists()

    def remove(self) -> None:
        """Stop the server (if running) and delete its directory. Safe to call twice."""
        if self.running:
            # Already gone is fine: the directory is removed below either way.
            with contextlib.suppress(StoreUnavailable):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ThrowawayPostgres:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.remove()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ThrowawayPostgres on 127.0.0.1:{self.port}, {state}>"


@contextlib.contextmanager
def throwaway_postgres(*, settings: Mapping[str, str] | None = None) -> Iterator[str]:
    """A new PostgreSQL server for the block: yields its DSN; stopped and deleted after.

    For teaching, tests and benchmarks — never for data you keep: the server lives in a
    temporary directory, on a random port bound to 127.0.0.1, and is gone on exit.

    Example:
        >>> from agentnb import PostgresCheckpointer
        >>> from agentnb.testing import throwaway_postgres
        >>> with throwaway_postgres() as dsn:  # doctest: +SKIP
        ...     with PostgresCheckpointer(dsn) as store:
        ...         ...

    Raises:
        MissingDependency: PostgreSQL's server programs are not installed (the message
            says how to install them).
        StoreUnavailable: the server could not be initialised or started.
    """
    with ThrowawayPostgres(settings=settings) as server:
        yield server.dsn()
