"""agentnb: see, step and approve agent workflows and state machines inside Jupyter.

Build a graph, compile it against a checkpointer, and run it — all at once, as a stream of
events, or one node per cell::

    from agentnb import StateGraph, SqliteCheckpointer, END

    graph = StateGraph("refund")
    graph.add_node("plan", lambda state: {"amount": 1000})
    graph.add_node("refund", lambda state: {"status": "done"})
    graph.set_entry_point("plan")
    graph.add_edge("plan", "refund")
    graph.add_interrupt_before("refund")
    workflow = graph.compile(SqliteCheckpointer("runs.sqlite3"))

    run = workflow.start({})
    run.step()                 # plan runs; the run pauses before refund
    run.approve(by="ada")
    run.run()                  # refund runs; the run completes
"""

from typing import TYPE_CHECKING

from agentnb.errors import (
    AgentnbError,
    ApprovalNotPending,
    BreakerOpen,
    ConflictingEdit,
    ConflictingUpdate,
    DecisionError,
    DefinitionError,
    ExerciseFailed,
    IncompatibleMachine,
    IncompatibleWorkflow,
    InstanceConflict,
    InstanceNotFound,
    InvalidAnswer,
    InvalidDecision,
    InvalidRetention,
    InvalidState,
    LeaseLost,
    LegacySuperstep,
    MissingDependency,
    NodeFailed,
    NodeTimeout,
    NoQuestion,
    NotAuthorized,
    PolicyUnavailable,
    RecursionLimitReached,
    RenderError,
    RoutingError,
    RunActive,
    RunBusy,
    RunError,
    RunNotActive,
    RunNotFound,
    SchemaError,
    SchemaVersionError,
    ScxmlError,
    StaleApproval,
    StepBudgetExhausted,
    StepNotCommitted,
    StoreCorrupt,
    StoreError,
    StoreFileError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
    SyncUnavailable,
    TaskNotNamed,
    TransitionNotAllowed,
    UnknownExercise,
    UnsupportedElement,
)
from agentnb.graph import END, START, NodeContext, Run, StateGraph, StepResult, Workflow
from agentnb.graph.superstep import Send
from agentnb.identity import Identity
from agentnb.resilience import CircuitBreaker, Retry
from agentnb.store.base import Checkpointer
from agentnb.store.records import Checkpoint, Decision, Event, EventType, RunRecord, Status

if TYPE_CHECKING:
    from agentnb.store.memory import MemoryCheckpointer
    from agentnb.store.sqlite import SqliteCheckpointer

__version__ = "0.1.0"

__all__ = [
    "END",
    "START",
    "AgentnbError",
    "ApprovalNotPending",
    "BreakerOpen",
    "ChartInstance",
    "Checkpoint",
    "Checkpointer",
    "CircuitBreaker",
    "ConflictingEdit",
    "ConflictingUpdate",
    "Decision",
    "DecisionError",
    "DefinitionError",
    "Event",
    "EventType",
    "ExerciseFailed",
    "Final",
    "History",
    "Identity",
    "IncompatibleMachine",
    "IncompatibleWorkflow",
    "InstanceConflict",
    "InstanceNotFound",
    "InvalidAnswer",
    "InvalidDecision",
    "InvalidRetention",
    "InvalidState",
    "LeaseLost",
    "LegacySuperstep",
    "ManualClock",
    "MemoryCheckpointer",
    "MissingDependency",
    "NoQuestion",
    "NodeContext",
    "NodeFailed",
    "NodeTimeout",
    "NotAuthorized",
    "Parallel",
    "PolicyUnavailable",
    "PostgresCheckpointer",
    "RecursionLimitReached",
    "RenderError",
    "Retry",
    "RoutingError",
    "Run",
    "RunActive",
    "RunBusy",
    "RunError",
    "RunNotActive",
    "RunNotFound",
    "RunRecord",
    "SchemaError",
    "SchemaVersionError",
    "ScxmlError",
    "Send",
    "SqliteCheckpointer",
    "StaleApproval",
    "State",
    "StateGraph",
    "Statechart",
    "Status",
    "StepBudgetExhausted",
    "StepNotCommitted",
    "StepResult",
    "StoreCorrupt",
    "StoreError",
    "StoreFileError",
    "StoreFull",
    "StoreReadOnly",
    "StoreUnavailable",
    "SyncUnavailable",
    "TaskNotNamed",
    "TransitionNotAllowed",
    "UnknownExercise",
    "UnsupportedElement",
    "Worker",
    "Workflow",
    "__version__",
    "load_scxml",
    "load_statechart",
    "load_xstate",
]

_LAZY = {
    "ChartInstance": "agentnb.fsm.instance",
    "Final": "agentnb.fsm.chart",
    "History": "agentnb.fsm.chart",
    "ManualClock": "agentnb.fsm.timers",
    "Parallel": "agentnb.fsm.chart",
    "State": "agentnb.fsm.chart",
    "MemoryCheckpointer": "agentnb.store.memory",  # the stores: loaded when first named
    "PostgresCheckpointer": "agentnb.store.postgres",
    "SqliteCheckpointer": "agentnb.store.sqlite",
    "Worker": "agentnb.graph.worker",  # lazily: it needs asyncio, which import agentnb does not
    "Statechart": "agentnb.fsm.chart",
    "load_scxml": "agentnb.fsm.scxml",
    "load_statechart": "agentnb.fsm.chart_file",
    "load_xstate": "agentnb.fsm.chart_file",
}


def __getattr__(name: str) -> object:
    """Statechart names, the Worker and the stores are imported when first used, so
    ``import agentnb`` stays light: a graph drawn or run in memory never loads SQLite."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentnb' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
