"""What a command's exit code says, the error that means "you asked it wrongly", and the
checks every command's arguments get before they reach a database."""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = ["OK", "REFUSED", "USAGE", "UsageError", "existing_file", "json_arg", "text_arg"]

OK, REFUSED, USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or a missing file: printed as one line, exit code :data:`USAGE`."""


def text_arg(name: str, value: str) -> None:
    r"""Refuse an argument that is not UTF-8 text.

    The command line is bytes; Python hands undecodable ones over as lone surrogates
    (``b"\xff"`` becomes ``"\udcff"``), which no database can store as text. A file
    name may be any bytes, so paths are not checked here.
    """
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        what = (
            f"byte {ord(bad) - 0xDC00:#04x}"
            if "\udc80" <= bad <= "\udcff"
            else f"character U+{ord(bad):04X}"
        )
        try:  # the bytes as given: b"ad\xffa" shows as ad\xffa
            shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte decodes to (only through main(argv))
            shown = value.encode("utf-8", "backslashreplace").decode("utf-8")
        raise UsageError(
            f"{name} is not UTF-8 text ({what} at position {exc.start} of {shown}): pass it "
            "in UTF-8 (is the terminal's encoding UTF-8?); nothing was changed"
        ) from None


def json_arg(flag: str, text: str, example: str = "'{...}'") -> Any:
    """``text`` parsed as JSON, or a :class:`UsageError` saying how to quote it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not JSON ({exc.msg}); quote it: {flag} {example}") from None
    except RecursionError:
        raise UsageError(f"{flag} nests arrays or objects too deeply to be read") from None


def existing_file(flag: str, path: str, missing: str) -> None:
    """Refuse ``path`` unless it names a regular file: ``missing`` when there is none, the
    operating system's words otherwise (a name too long, a directory, no permission)."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(missing) from None
    except OSError as exc:
        raise UsageError(f"{flag} {path!r}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte: only through main(argv), never from a shell
        raise UsageError(f"{flag} {path!r}: {exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{flag} {path!r} is a directory: name a file in it")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{flag} {path!r} is not a regular file")
