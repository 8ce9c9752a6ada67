"""Checkpointers: where runs, checkpoints, events and decisions are kept, and the approver
policies stored with each run."""

from agentnb.store.base import Checkpointer
from agentnb.store.memory import MemoryCheckpointer
from agentnb.store.policy import ApproverPolicy, PendingRun, RunPolicy
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


def __getattr__(name: str) -> object:
    """The PostgreSQL store is imported when first used: most sessions never need it, and
    its modules are a fifth of what ``import agentnb`` would load."""
    if name != "PostgresCheckpointer":
        raise AttributeError(f"module 'agentnb.store' has no attribute {name!r}")
    from agentnb.store.postgres import PostgresCheckpointer

    return PostgresCheckpointer
