"""The throwaway PostgreSQL server the tests get (tests/pg_cluster.py), and how a missing
one is reported: skipped on a developer's machine, a failure in CI."""

from __future__ import annotations

import os

import psycopg
import pytest

from tests import pg_cluster
from tests.conftest import server_missing
from tests.pg_cluster import Cluster, ServerMissing, find_bindir


def test_in_ci_a_missing_server_fails_the_run_instead_of_skipping() -> None:
    with pytest.raises(pytest.fail.Exception, match="cannot run in CI: no initdb"):
        server_missing("no initdb", {"CI": "true"})


def test_outside_ci_a_missing_server_skips_and_says_why() -> None:
    with pytest.raises(pytest.skip.Exception, match="skipped: no initdb"):
        server_missing("no initdb", {})


def test_without_server_binaries_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg_cluster.glob, "glob", lambda pattern: [])
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("PG_BINDIR", raising=False)
    with pytest.raises(ServerMissing, match="apt-get install postgresql"):
        find_bindir()


@pytest.mark.slow
def test_a_throwaway_cluster_listens_on_localhost_as_an_unprivileged_user_and_is_removed() -> None:
    cluster = Cluster.create()
    try:
        with psycopg.connect(cluster.dsn(), autocommit=True) as conn:
            (address,) = conn.execute("SELECT host(inet_server_addr())").fetchone()
            (listen,) = conn.execute("SHOW listen_addresses").fetchone()
        assert (address, listen) == ("127.0.0.1", "127.0.0.1")
        owner = (cluster.data / "postmaster.pid").stat().st_uid
        assert owner != 0
        assert owner == os.geteuid() or os.geteuid() == 0
    finally:
        cluster.remove()
    assert not cluster.root.exists()


def test_the_sessions_server_refuses_a_wrong_password(pg_cluster: Cluster) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg_cluster.dsn(password="wrong"), connect_timeout=5)
