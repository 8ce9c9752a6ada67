"""``Identity``: who this process can vouch for, as opposed to the name someone types.

A decision records two things about its author: the name given (``by=`` / ``--as``), free
text kept for the audit, and the identity the process itself can vouch for — which is what
an approver policy is checked against. By default that is:

* ``JUPYTERHUB_USER`` when set: JupyterHub's spawner sets it for the single-user server,
  so every kernel and terminal of that server runs as that hub user (groups are not in the
  environment; a provider that asks the hub's API can add them);
* otherwise the operating-system user running the process, with its groups.

Other setups plug in a provider — any ``callable() -> Identity`` — with
``graph.compile(identity=...)`` or ``SqliteCheckpointer(..., identity=...)``.

This is the process's word, not an authentication protocol: someone who can edit the
process's environment or write the database file directly is not stopped by it. What it
stops is a decision checked against a name anyone can type.

Example:
    >>> ada = Identity("ada", groups=["finance"])
    >>> ada.matches("group:finance"), ada.matches("ada"), ada.matches("bob")
    (True, True, False)
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agentnb.errors import DefinitionError

__all__ = [
    "GROUP_PREFIX",
    "Identity",
    "IdentityProvider",
    "check_provider",
    "current_identity",
    "vouched",
]

GROUP_PREFIX = "group:"
"""An approver entry naming a group rather than a person: ``"group:finance"``."""


@dataclass(frozen=True, slots=True, init=False)
class Identity:
    """A person (or service) as the process knows them.

    Attributes:
        name: the user name (``JUPYTERHUB_USER``, the OS login, or the provider's choice).
        groups: the groups the name belongs to (an approver entry ``"group:NAME"`` matches).
        source: where the identity came from: ``"jupyterhub"``, ``"os"`` or a provider's label.

    Example:
        >>> from agentnb import Identity
        >>> ada = Identity("ada", groups=["finance"])
        >>> ada.matches("ada"), ada.matches("group:finance"), ada.matches("bob")
        (True, True, False)
    """

    name: str
    groups: frozenset[str]
    source: str

    def __init__(self, name: str, groups: Iterable[str] = (), source: str = "provider") -> None:
        if not isinstance(name, str) or not name.strip():
            raise DefinitionError(
                f"an identity needs a non-empty name, not {name!r}",
                culprit="identity",
                fix="Return Identity('ada', groups=[...]) from the identity provider.",
            )
        if not isinstance(groups, str):
            groups = tuple(groups)  # a generator is read once
        if isinstance(groups, str) or not all(isinstance(g, str) for g in groups):
            raise DefinitionError(
                f"identity {name!r}: groups must be a collection of strings, not {groups!r}",
                culprit="identity",
                fix="Pass groups=['finance', ...].",
            )
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "groups", frozenset(groups))
        object.__setattr__(self, "source", str(source))

    def matches(self, entry: str) -> bool:
        """True when the approver ``entry`` names this identity or one of its groups."""
        if entry.startswith(GROUP_PREFIX):
            return entry[len(GROUP_PREFIX) :] in self.groups
        return entry == self.name

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"

    def to_json(self) -> dict[str, Any]:
        """The identity as stored with a run or a decision."""
        return {"name": self.name, "groups": sorted(self.groups), "source": self.source}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Identity:
        return cls(data["name"], data.get("groups", ()), data.get("source", "provider"))


IdentityProvider = Callable[[], Identity]
"""Returns the identity the process vouches for; called at each start and decision."""


@functools.lru_cache(maxsize=8)
def _os_identity(euid: int) -> Identity:
    """The OS user ``euid`` and its groups (cached: the group database may be remote)."""
    try:
        import grp
        import pwd
    except ImportError:  # Windows: no user database to ask for groups
        import getpass

        return Identity(getpass.getuser(), (), "os")
    try:
        entry = pwd.getpwuid(euid)
    except KeyError:  # a uid with no user entry (some containers): name it by number
        return Identity(str(euid), (str(g) for g in os.getgroups()), "os")
    groups = set()
    for gid in os.getgrouplist(entry.pw_name, entry.pw_gid):
        try:
            groups.add(grp.getgrgid(gid).gr_name)
        except KeyError:  # a gid without a name in the group database
            groups.add(str(gid))
    return Identity(entry.pw_name, groups, "os")


def current_identity() -> Identity:
    """The default provider: the JupyterHub user inside JupyterHub, else the OS user."""
    hub_user = os.environ.get("JUPYTERHUB_USER", "").strip()
    if hub_user:
        return Identity(hub_user, (), "jupyterhub")
    return _os_identity(os.geteuid()) if hasattr(os, "geteuid") else _os_identity(-1)


def check_provider(provider: object, where: str) -> IdentityProvider | None:
    """Refuse an ``identity=`` that is not a provider (``None`` keeps the default)."""
    if provider is None:
        return None
    if isinstance(provider, Identity) or not callable(provider):
        raise DefinitionError(
            f"{where}: identity={provider!r} is not an identity provider",
            culprit="identity",
            fix="Pass a function that returns the Identity, e.g. identity=lambda: "
            "Identity('ada', groups=['finance']).",
        )
    return provider


def vouched(provider: IdentityProvider) -> Identity:
    """Ask ``provider`` who this is; refuse anything but an :class:`Identity`."""
    found = provider()
    if not isinstance(found, Identity):
        raise DefinitionError(
            f"the identity provider {getattr(provider, '__qualname__', provider)!r} returned "
            f"{found!r}, not an Identity",
            culprit="identity",
            fix="Return agentnb.Identity(name, groups=[...]) from it.",
        )
    return found
