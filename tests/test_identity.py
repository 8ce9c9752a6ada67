"""Who the process vouches for: JupyterHub's user, else the OS user with its groups."""

from __future__ import annotations

import doctest
import grp
import os
import pwd
from typing import Any

import pytest

from agentnb import DefinitionError, Identity
from agentnb.identity import current_identity


def test_inside_jupyterhub_the_identity_is_the_hub_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    assert current_identity() == Identity("ada", (), "jupyterhub")


def test_elsewhere_the_identity_is_the_os_user_with_its_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    me = current_identity()
    entry = pwd.getpwuid(os.geteuid())
    assert (me.name, me.source) == (entry.pw_name, "os")
    assert grp.getgrgid(entry.pw_gid).gr_name in me.groups


def test_a_blank_hub_user_falls_back_to_the_os_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "  ")
    assert current_identity().source == "os"


def test_an_approver_entry_matches_a_name_or_a_group_never_both_ways() -> None:
    ada = Identity("ada", groups=["finance"])
    assert ada.matches("ada")
    assert ada.matches("group:finance")
    assert not ada.matches("finance")  # a group is only ever named with the prefix
    assert not ada.matches("group:ada")
    assert not Identity("finance").matches("group:finance")


def test_an_identity_round_trips_through_its_stored_form() -> None:
    bob = Identity("bob", groups={"b", "a"}, source="ldap")
    assert bob.to_json() == {"name": "bob", "groups": ["a", "b"], "source": "ldap"}
    assert Identity.from_json(bob.to_json()) == bob
    assert str(bob) == "bob (ldap)"


@pytest.mark.parametrize(("name", "groups"), [("", ()), ("  ", ()), (3, ()), ("ada", "finance")])
def test_a_malformed_identity_is_a_definition_error(name: Any, groups: Any) -> None:
    with pytest.raises(DefinitionError):
        Identity(name, groups)


def test_the_identity_and_approver_examples_in_the_docs_run() -> None:
    import agentnb.identity
    from agentnb import StateGraph

    runner = doctest.DocTestRunner()
    finder = doctest.DocTestFinder()
    found = [
        *finder.find(agentnb.identity),
        *finder.find(StateGraph.add_interrupt_before, globs={"StateGraph": StateGraph}),
    ]
    for test in found:
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert (failed, attempted >= 5) == (0, True)


def test_groups_may_come_from_any_iterable() -> None:
    assert Identity("ada", (g for g in ["a", "b"])).groups == {"a", "b"}
