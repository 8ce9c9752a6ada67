"""Checkpointers: where runs, checkpoints, events and decisions are kept."""

from agentnb.store.base import Checkpointer
from agentnb.store.memory import MemoryCheckpointer
from agentnb.store.records import Checkpoint, Decision, Event, EventType, RunRecord, Status
from agentnb.store.sqlite import SqliteCheckpointer

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "Decision",
    "Event",
    "EventType",
    "MemoryCheckpointer",
    "RunRecord",
    "SqliteCheckpointer",
    "Status",
]
