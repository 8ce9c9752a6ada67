"""The old home of :mod:`agentnb.definitions.document`, kept so its imports keep working."""

from agentnb.definitions.document import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_PROBLEMS,
    MORE_PROBLEMS,
    Document,
    Format,
    Source,
    json_path,
    parse_document,
    read_source,
)

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_PROBLEMS",
    "MORE_PROBLEMS",
    "Document",
    "Format",
    "Source",
    "json_path",
    "parse_document",
    "read_source",
]
