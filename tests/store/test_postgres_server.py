"""The throwaway PostgreSQL server (``agentnb.testing.throwaway_postgres``) the tests, the
benchmarks and notebook 08 use, and how a missing one is reported: a typed error that says
what to install; in the tests, skipped on a developer's machine and a failure in CI."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psycopg
import pytest

import agentnb._postgres_server as server_module
from agentnb import MissingDependency, PostgresCheckpointer, StoreUnavailable
from agentnb.testing import ThrowawayPostgres, throwaway_postgres
from tests.conftest import server_missing


def test_in_ci_a_missing_server_fails_the_run_instead_of_skipping() -> None:
    with pytest.raises(pytest.fail.Exception, match="cannot run in CI: no initdb"):
        server_missing("no initdb", {"CI": "true"})


def test_outside_ci_a_missing_server_skips_and_says_why() -> None:
    with pytest.raises(pytest.skip.Exception, match="skipped: no initdb"):
        server_missing("no initdb", {})


def test_a_servers_port_is_drawn_below_the_range_outgoing_connections_take_theirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An outgoing connection's source port could take a port from bind(0) before the server
    # binds it (or binds it again after a restart); one below that range it cannot.
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [server_module.free_port() for _ in range(50)]
    assert all(10_000 <= port < low for port in ports)
    assert len(set(ports)) > 40  # drawn at random, not counted up from one number
    with socket.socket() as taken:  # a port something is bound to is drawn again
        taken.bind(("127.0.0.1", ports[0]))
        draws = iter([ports[0], ports[1]])
        monkeypatch.setattr(server_module._RANDOM, "randrange", lambda a, b: next(draws))
        assert server_module.free_port() == ports[1]


def test_without_server_binaries_a_throwaway_server_is_a_typed_error_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(server_module.glob, "glob", lambda pattern: [])
    monkeypatch.setenv("PATH", "")
    monkeypatch.setenv("PG_BINDIR", str(tmp_path))  # a folder without initdb
    monkeypatch.setattr(server_module.tempfile, "mkdtemp", pytest.fail)  # nothing created
    with (
        pytest.raises(MissingDependency, match="apt-get install postgresql") as caught,
        throwaway_postgres(),
    ):
        pass
    assert caught.value.extra == "postgres"
    assert "PG_BINDIR" in caught.value.install


@pytest.mark.slow
def test_a_throwaway_server_listens_on_localhost_as_an_unprivileged_user_and_is_removed() -> None:
    with ThrowawayPostgres() as server:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            (address,) = conn.execute("SELECT host(inet_server_addr())").fetchone()
            (listen,) = conn.execute("SHOW listen_addresses").fetchone()
        assert (address, listen) == ("127.0.0.1", "127.0.0.1")
        owner = (server.data / "postmaster.pid").stat().st_uid
        assert owner != 0
        assert owner == os.geteuid() or os.geteuid() == 0
        assert "running" in repr(server)
    assert not server.root.exists()
    assert not server.running
    server.remove()  # twice is harmless


@pytest.mark.slow
def test_throwaway_postgres_yields_a_dsn_a_checkpointer_opens_and_stops_the_server_after() -> None:
    with throwaway_postgres() as dsn, PostgresCheckpointer(dsn) as store:
        assert store.list_runs() == []
    with pytest.raises(StoreUnavailable):
        PostgresCheckpointer(dsn, connect_timeout=2)


@pytest.mark.slow
def test_a_server_that_cannot_start_is_a_typed_error_and_leaves_no_directory() -> None:
    made: list[Path] = []
    real = server_module.tempfile.mkdtemp

    def remembered(**kwargs: str) -> str:
        made.append(Path(real(**kwargs)))
        return str(made[-1])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(server_module.tempfile, "mkdtemp", remembered)
        with pytest.raises(StoreUnavailable, match="pg_ctl failed") as caught:
            ThrowawayPostgres(settings={"shared_buffers": "'not a size'"})
    assert "server.log" in caught.value.fix
    assert made
    assert not made[0].exists()


def test_the_sessions_server_refuses_a_wrong_password(pg_cluster: ThrowawayPostgres) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg_cluster.dsn(password="wrong"), connect_timeout=5)
