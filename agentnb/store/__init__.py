"""Checkpointers: where runs, checkpoints, events and decisions are kept, and the approver
policies stored with each run."""

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
