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

from agentnb.errors import (
    AgentnbError,
    ApprovalNotPending,
    BreakerOpen,
    ConflictingUpdate,
    DefinitionError,
    ExerciseFailed,
    IncompatibleWorkflow,
    InvalidAnswer,
    InvalidDecision,
    InvalidState,
    MissingDependency,
    NodeFailed,
    NodeTimeout,
    NotAuthorized,
    PolicyUnavailable,
    RoutingError,
    RunBusy,
    RunNotFound,
    StaleApproval,
    StepBudgetExhausted,
    TaskNotNamed,
    UnknownExercise,
)
from agentnb.graph import END, START, NodeContext, Run, StateGraph, StepResult, Workflow
from agentnb.graph.superstep import Send
from agentnb.identity import Identity
from agentnb.resilience import CircuitBreaker, Retry
from agentnb.store import (
    Checkpoint,
    Checkpointer,
    Decision,
    Event,
    EventType,
    MemoryCheckpointer,
    RunRecord,
    SqliteCheckpointer,
    Status,
)

__version__ = "0.1.0"

__all__ = [
    "END",
    "START",
    "AgentnbError",
    "ApprovalNotPending",
    "BreakerOpen",
    "Checkpoint",
    "Checkpointer",
    "CircuitBreaker",
    "ConflictingUpdate",
    "Decision",
    "DefinitionError",
    "Event",
    "EventType",
    "ExerciseFailed",
    "Identity",
    "IncompatibleWorkflow",
    "InvalidAnswer",
    "InvalidDecision",
    "InvalidState",
    "MemoryCheckpointer",
    "MissingDependency",
    "NodeContext",
    "NodeFailed",
    "NodeTimeout",
    "NotAuthorized",
    "PolicyUnavailable",
    "Retry",
    "RoutingError",
    "Run",
    "RunBusy",
    "RunNotFound",
    "RunRecord",
    "Send",
    "SqliteCheckpointer",
    "StaleApproval",
    "StateGraph",
    "Status",
    "StepBudgetExhausted",
    "StepResult",
    "TaskNotNamed",
    "UnknownExercise",
    "Workflow",
    "__version__",
]
