"""Errors of the checkpoint store: its file, its version, its server, a lost race, retention."""

from __future__ import annotations

from agentnb.errors._root import AgentnbError


class StoreError(AgentnbError):
    """The checkpoint store cannot be used (closed, corrupt, unreachable).

    Example:
        >>> from agentnb import StoreCorrupt, StoreError, StoreUnavailable
        >>> issubclass(StoreCorrupt, StoreError), issubclass(StoreUnavailable, StoreError)
        (True, True)
    """


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

    Example:
        >>> import pathlib, tempfile
        >>> from agentnb import SqliteCheckpointer, StoreFileError
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> (folder / "notes.txt").write_text("not a database, just text " * 100)
        2600
        >>> try:
        ...     SqliteCheckpointer(folder / "notes.txt")
        ... except StoreFileError as error:
        ...     print(type(error).__name__, error.path.endswith("notes.txt"))
        StoreCorrupt True
    """

    def __init__(self, path: str, doing: str, reason: str, fix: str) -> None:
        self.path = path
        self.doing = doing
        self.reason = reason
        self.fix = fix
        super().__init__(f"cannot {doing} {path}: {reason}. {fix}")


class StoreReadOnly(StoreFileError):
    """This process may not write the database file or the directory holding it.

    Example:
        >>> from agentnb import StoreFileError, StoreReadOnly
        >>> error = StoreReadOnly(
        ...     "runs.sqlite3", "writing a step", "readonly database", "make the file writable"
        ... )
        >>> isinstance(error, StoreFileError), error.path
        (True, 'runs.sqlite3')
    """


class StoreCorrupt(StoreFileError):
    """The file is damaged, or is not a SQLite database: restore it from a backup.

    Example:
        >>> import pathlib, tempfile
        >>> from agentnb import SqliteCheckpointer, StoreCorrupt
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.sqlite3"
        >>> _ = path.write_bytes(b"garbage " * 512)
        >>> try:
        ...     SqliteCheckpointer(path)
        ... except StoreCorrupt as error:
        ...     print(error.doing)
        open
    """


class StoreFull(StoreFileError):
    """The disk (or the quota) holding the database is full: nothing of the write was
    saved; free space and retry.

    Example:
        >>> from agentnb import StoreFileError, StoreFull
        >>> error = StoreFull("runs.sqlite3", "writing", "database or disk is full", "free space")
        >>> isinstance(error, StoreFileError), error.reason
        (True, 'database or disk is full')
    """


class SchemaVersionError(StoreError):
    """The database was created by a newer agentnb than this one.

    Example:
        >>> from agentnb import SchemaVersionError
        >>> error = SchemaVersionError("runs.sqlite3", found=99, supported=12)
        >>> error.found, error.supported
        (99, 12)
    """

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

    Example:
        >>> from agentnb import StoreUnavailable
        >>> error = StoreUnavailable("postgresql://db/agentnb", "connection refused", "start it")
        >>> error.where
        'postgresql://db/agentnb'
    """

    def __init__(self, where: str, reason: str, fix: str) -> None:
        self.where = where
        self.reason = reason
        self.fix = fix
        super().__init__(f"cannot connect to {where}: {reason}. Fix: {fix}")


class InstanceConflict(StoreError):
    """Another writer moved a machine instance on while this event was being decided.

    Example:
        >>> from agentnb import InstanceConflict
        >>> error = InstanceConflict("door-1", "push", expected=3, found=4)  # another went first
        >>> error.expected, error.found
        (3, 4)
    """

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
    """``prune`` was given a duration or a status it cannot use; nothing was deleted.

    Example:
        >>> from agentnb import InvalidRetention, MemoryCheckpointer
        >>> try:
        ...     MemoryCheckpointer().prune(before=0, status="pending")  # never prunes a pending run
        ... except InvalidRetention as error:
        ...     print(error.argument, error.value)
        status pending
    """

    def __init__(self, argument: str, value: object, fix: str) -> None:
        self.argument = argument
        self.value = value
        super().__init__(f"{argument} {value!r} cannot be used: {fix}; nothing was deleted")
