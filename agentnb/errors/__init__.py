"""Every exception agentnb raises.

One root, branches by what the caller does next. Each error keeps its data in
attributes and builds its message from them: the fact first, then the fix.

::

    AgentnbError
    ├── DefinitionError            the graph or machine definition is wrong: fix the code
    │   ├── SchemaError            a JSON/YAML definition is invalid (``problems`` with JSON paths)
    │   ├── IncompatibleWorkflow   a stored run does not fit the workflow trying to drive it
    │   ├── ScxmlError             an SCXML document is malformed (``line`` says where)
    │   │   └── UnsupportedElement an SCXML element or target agentnb refuses to run
    │   └── IncompatibleMachine    a stored instance does not fit the machine definition
    ├── InvalidState               a state value cannot be stored as JSON (``path`` says where)
    ├── RunError                   something happened to a run
    │   ├── NodeFailed             a node raised; ``__cause__`` is the original exception
    │   ├── RoutingError           a router failed or returned an undeclared target
    │   ├── ConflictingUpdate      two tasks of one superstep wrote a key that has no reducer
    │   ├── StepBudgetExhausted    the run hit ``max_steps``
    │   │   └── RecursionLimitReached  one invocation passed ``recursion_limit`` (LangGraph's)
    │   ├── LegacySuperstep        a parallel superstep planned by an older agentnb
    │   ├── StepNotCommitted       a worker's commits of a step kept failing: the run failed
    │   ├── NodeTimeout            a node ran past its ``timeout`` (the cause of NodeFailed)
    │   ├── BreakerOpen            a circuit breaker refused the call (its dependency is down)
    │   ├── RunNotFound            no run with that id in this store
    │   ├── RunBusy                another worker holds the run's lease
    │   ├── LeaseLost              this worker was fenced out by a newer owner
    │   ├── RunNotActive           the run cannot be driven in its current status
    │   └── RunActive              the run is pending or being driven: it is never deleted
    ├── DecisionError              an approval or rejection was refused
    │   ├── InvalidDecision        not "approved"/"rejected", or no approver named
    │   ├── ApprovalNotPending     the run is not waiting for a decision (decided already?)
    │   ├── TaskNotNamed           several tasks await approval: say which one is decided
    │   ├── InvalidAnswer          an answer to a node's question does not fit its schema
    │   ├── NoQuestion             the run waits for an approval, not for an answer
    │   ├── ConflictingEdit        two held tasks' edits replace one key that has no reducer
    │   ├── StaleApproval          the approver saw a state that has changed since
    │   └── NotAuthorized          the interrupt's approver policy refuses this identity
    │       └── PolicyUnavailable  the policy is code this process has not loaded (the CLI)
    ├── TransitionNotAllowed       a state machine got an event it does not accept now
    ├── InstanceNotFound           no state-machine instance with that id in this store
    ├── StoreError                 the checkpoint database cannot be used
    │   ├── StoreFileError         the SQLite file cannot be opened, read or written (I/O, lock)
    │   │   ├── StoreReadOnly      this process may not write the file or its directory
    │   │   ├── StoreCorrupt       the file is damaged or not a database: restore a backup
    │   │   └── StoreFull          the disk is full: nothing was saved, free space and retry
    │   ├── SchemaVersionError     the database was written by a newer agentnb
    │   ├── StoreUnavailable       the database server cannot be reached or refused the login
    │   ├── InstanceConflict       another writer moved a machine instance on first
    │   └── InvalidRetention       ``prune``: a duration or status it cannot use
    ├── RenderError                Graphviz failed, timed out, or drew something unsafe
    ├── UnknownExercise            ``agentnb.teach`` has no exercise with that id
    ├── ExerciseFailed             ``check(..., strict=True)`` found the exercise not done
    ├── MissingDependency          an optional extra is not installed (``pip install ...``)
    └── SyncUnavailable            a sync call cannot wait in this browser: ``await`` its twin

The classes are written in private modules by area (``_runs``, ``_store`` ...) and live
here: ``from agentnb.errors import X``, and ``X.__module__`` is ``agentnb.errors``.
"""

from __future__ import annotations

from agentnb.errors._decisions import (
    ApprovalNotPending,
    ConflictingEdit,
    DecisionError,
    InvalidAnswer,
    InvalidDecision,
    NoQuestion,
    NotAuthorized,
    PolicyUnavailable,
    StaleApproval,
    TaskNotNamed,
)
from agentnb.errors._definitions import (
    DefinitionError,
    IncompatibleMachine,
    IncompatibleWorkflow,
    SchemaError,
    SchemaProblem,
    ScxmlError,
    UnsupportedElement,
)
from agentnb.errors._environment import MissingDependency, RenderError, SyncUnavailable
from agentnb.errors._machines import InstanceNotFound, TransitionNotAllowed
from agentnb.errors._root import AgentnbError
from agentnb.errors._root import describe as describe
from agentnb.errors._runs import (
    BreakerOpen,
    ConflictingUpdate,
    InvalidState,
    LeaseLost,
    LegacySuperstep,
    NodeFailed,
    NodeTimeout,
    RecursionLimitReached,
    RoutingError,
    RunActive,
    RunBusy,
    RunError,
    RunNotActive,
    RunNotFound,
    StepBudgetExhausted,
    StepNotCommitted,
)
from agentnb.errors._store import (
    InstanceConflict,
    InvalidRetention,
    SchemaVersionError,
    StoreCorrupt,
    StoreError,
    StoreFileError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
)
from agentnb.errors._teaching import ExerciseFailed, UnknownExercise

__all__ = [
    "AgentnbError",
    "ApprovalNotPending",
    "BreakerOpen",
    "ConflictingEdit",
    "ConflictingUpdate",
    "DecisionError",
    "DefinitionError",
    "ExerciseFailed",
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
    "MissingDependency",
    "NoQuestion",
    "NodeFailed",
    "NodeTimeout",
    "NotAuthorized",
    "PolicyUnavailable",
    "RecursionLimitReached",
    "RenderError",
    "RoutingError",
    "RunActive",
    "RunBusy",
    "RunError",
    "RunNotActive",
    "RunNotFound",
    "SchemaError",
    "SchemaProblem",
    "SchemaVersionError",
    "ScxmlError",
    "StaleApproval",
    "StepBudgetExhausted",
    "StepNotCommitted",
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
]

# The public names say they live here, where the tree above documents them (tracebacks,
# reprs and pickles name agentnb.errors.X), not in the private module that defines them.
for _name in (*__all__, "describe"):
    globals()[_name].__module__ = __name__
del _name
