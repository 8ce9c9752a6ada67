"""Checkpointers: where runs, checkpoints, events and decisions are kept, and the approver
policies stored with each run."""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentnb.store.base import Checkpointer
    from agentnb.store.memory import MemoryCheckpointer
    from agentnb.store.policy import ApproverPolicy, PendingRun, RunPolicy
    from agentnb.store.postgres import PostgresCheckpointer
    from agentnb.store.records import Checkpoint, Decision, Event, EventType, RunRecord, Status
    from agentnb.store.sqlite import SqliteCheckpointer

__all__ = [
    "ApproverPolicy",
    "Checkpoint",
    "Checkpointer",
    "Decision",
    "Event",
    "EventType",
    "MemoryCheckpointer",
    "PendingRun",
    "PostgresCheckpointer",
    "RunPolicy",
    "RunRecord",
    "SqliteCheckpointer",
    "Status",
]

_LAZY = {
    "ApproverPolicy": "agentnb.store.policy",
    "Checkpoint": "agentnb.store.records",
    "Checkpointer": "agentnb.store.base",
    "Decision": "agentnb.store.records",
    "Event": "agentnb.store.records",
    "EventType": "agentnb.store.records",
    "MemoryCheckpointer": "agentnb.store.memory",
    "PendingRun": "agentnb.store.policy",
    "PostgresCheckpointer": "agentnb.store.postgres",
    "RunPolicy": "agentnb.store.policy",
    "RunRecord": "agentnb.store.records",
    "SqliteCheckpointer": "agentnb.store.sqlite",
    "Status": "agentnb.store.records",
}


def __getattr__(name: str) -> object:
    """Each name is imported from its module when first used, so a module of the runtime
    importing ``agentnb.store.records`` does not load every backend with this package."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentnb.store' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
