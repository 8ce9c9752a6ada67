"""Errors of the checkpoint store: its version, its server, a lost race, retention."""

from __future__ import annotations

from agentnb.errors._root import AgentnbError


class StoreError(AgentnbError):
    """The checkpoint store cannot be used (closed, corrupt, unreachable)."""


class SchemaVersionError(StoreError):
    """The database was created by a newer agentnb than this one."""

    def __init__(self, path: str, found: int, supported: int) -> None:
        self.path = path
        self.found = found
        self.supported = supported
        super().__init__(
            f"{path} has schema version {found}, but this agentnb understands up to "
            f"{supported}. Upgrade agentnb (pip install -U agentnb) to open it."
        )


class StoreUnavailable(StoreError):
    """The database server cannot be reached, or refused the connection (PostgreSQL).

    Attributes:
        where: the DSN, without its password.
        reason: what the server or the client library said.
        fix: what to change.
    """

    def __init__(self, where: str, reason: str, fix: str) -> None:
        self.where = where
        self.reason = reason
        self.fix = fix
        super().__init__(f"cannot connect to {where}: {reason}. Fix: {fix}")


class InstanceConflict(StoreError):
    """Another writer moved a machine instance on while this event was being decided."""

    def __init__(self, instance_id: str, event: str, expected: int, found: int) -> None:
        self.instance_id = instance_id
        self.event = event
        self.expected = expected
        self.found = found
        super().__init__(
            f"instance {instance_id!r} moved on while event {event!r} was processed (now at "
            f"#{found}, expected #{expected}), so nothing was saved. Send the event again: "
            "it will be decided from the new state."
        )


class InvalidRetention(StoreError):
    """``prune`` was given a duration or a status it cannot use; nothing was deleted."""

    def __init__(self, argument: str, value: object, fix: str) -> None:
        self.argument = argument
        self.value = value
        super().__init__(f"{argument} {value!r} cannot be used: {fix}; nothing was deleted")
