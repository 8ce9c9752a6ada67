"""Errors of the checkpoint store: its file, its version, its server, a lost race, retention."""

from __future__ import annotations

from agentnb.errors._root import AgentnbError


class StoreError(AgentnbError):
    """The checkpoint store cannot be used (closed, corrupt, unreachable)."""


class StoreFileError(StoreError):
    """The SQLite file could not be opened, read or written: what the file system or SQLite
    said, and what to do. A write that fails this way is rolled back: nothing of it is saved
    unless the message says its outcome is unknown (an I/O error during its commit).

    Its subclasses say what the caller does next: :class:`StoreReadOnly` (get write
    permission, or open a copy), :class:`StoreCorrupt` (restore a backup), :class:`StoreFull`
    (free space, then retry). This class itself: an I/O error, a lock held past the timeout,
    a file that cannot be opened.

    Attributes:
        path: the database file.
        doing: what failed: ``"open"``, ``"read"``, ``"write to"``.
        reason: what SQLite (or the operating system) said.
        fix: what to do.
    """

    def __init__(self, path: str, doing: str, reason: str, fix: str) -> None:
        self.path = path
        self.doing = doing
        self.reason = reason
        self.fix = fix
        super().__init__(f"cannot {doing} {path}: {reason}. {fix}")


class StoreReadOnly(StoreFileError):
    """This process may not write the database file or the directory holding it."""


class StoreCorrupt(StoreFileError):
    """The file is damaged, or is not a SQLite database: restore it from a backup."""


class StoreFull(StoreFileError):
    """The disk (or the quota) holding the database is full: nothing of the write was
    saved; free space and retry."""


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
