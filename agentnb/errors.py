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
    │   ├── SchemaVersionError     the database was written by a newer agentnb
    │   ├── StoreUnavailable       the database server cannot be reached or refused the login
    │   ├── InstanceConflict       another writer moved a machine instance on first
    │   └── InvalidRetention       ``prune``: a duration or status it cannot use
    ├── RenderError                Graphviz failed, timed out, or drew something unsafe
    ├── UnknownExercise            ``agentnb.teach`` has no exercise with that id
    ├── ExerciseFailed             ``check(..., strict=True)`` found the exercise not done
    └── MissingDependency          an optional extra is not installed (``pip install ...``)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    "MissingDependency",
    "NoQuestion",
    "NodeFailed",
    "NodeTimeout",
    "NotAuthorized",
    "PolicyUnavailable",
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
    "StoreError",
    "StoreUnavailable",
    "TaskNotNamed",
    "TransitionNotAllowed",
    "UnknownExercise",
    "UnsupportedElement",
]


class AgentnbError(Exception):
    """Root of every error raised by agentnb."""


# -- definitions -------------------------------------------------------------------------


class DefinitionError(AgentnbError):
    """A workflow or state-machine definition is invalid.

    Attributes:
        culprit: the node, edge or state at fault (``None`` when the whole definition is).
        fix: what to change.
    """

    def __init__(self, problem: str, *, culprit: str | None = None, fix: str = "") -> None:
        self.problem = problem
        self.culprit = culprit
        self.fix = fix
        super().__init__(f"{problem}. {fix}" if fix else problem)


class ScxmlError(DefinitionError):
    """An SCXML document cannot be read.

    Attributes:
        line: the line of the element at fault (``None`` when the document is not XML).
        source: the file name, when it came from a file.
    """

    def __init__(
        self, problem: str, *, line: int | None, source: str | None = None, fix: str = ""
    ) -> None:
        self.line = line
        self.source = source
        where = f"{source or 'SCXML'}" + (f" line {line}" if line is not None else "")
        super().__init__(f"{where}: {problem}", culprit=where, fix=fix)


class UnsupportedElement(ScxmlError):
    """An SCXML element (or a ``<send>`` target/type) agentnb does not run; nothing is skipped.

    Attributes:
        element: the element's name (``invoke``, ``script`` ...), or ``send`` for a target.
    """

    def __init__(
        self, element: str, *, line: int | None, source: str | None = None, detail: str = ""
    ) -> None:
        self.element = element
        what = detail or f"<{element}> is not supported"
        super().__init__(
            what,
            line=line,
            source=source,
            fix="Remove it or replace it with supported elements (state, parallel, final, "
            "history, transition, onentry/onexit, raise, send between SCXML sessions, "
            "cancel, assign, log, if, foreach, datamodel, invoke of an inline <scxml>)",
        )


class SchemaProblem:
    """One problem found in a JSON/YAML definition, at a JSON path like ``$.states[2]``."""

    __slots__ = ("fix", "message", "path")

    def __init__(self, path: str, message: str, fix: str = "") -> None:
        self.path = path
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" + (f" ({self.fix})" if self.fix else "")

    def __repr__(self) -> str:
        return f"SchemaProblem({self.path!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SchemaProblem) and (self.path, self.message, self.fix) == (
            other.path,
            other.message,
            other.fix,
        )

    def __hash__(self) -> int:
        return hash((self.path, self.message, self.fix))


class SchemaError(DefinitionError):
    """A JSON/YAML definition is invalid; ``problems`` lists every problem found at once."""

    def __init__(self, problems: Sequence[SchemaProblem], *, source: str | None = None) -> None:
        self.problems = list(problems)
        self.source = source
        where = f" in {source}" if source else ""
        lines = "\n".join(f"  - {p}" for p in self.problems)
        count = len(self.problems)
        super().__init__(
            f"{count} problem{'s' if count != 1 else ''}{where}:\n{lines}",
            culprit=source,
        )
        # The message above already carries every fix; keep str() free of a trailing fix.
        self.args = (f"{count} problem{'s' if count != 1 else ''}{where}:\n{lines}",)


class IncompatibleWorkflow(DefinitionError):
    """A stored run was made by a workflow of a different shape than the one resuming it."""

    def __init__(self, run_id: str, reason: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(
            f"run {run_id!r} cannot be driven by this workflow: {reason}",
            culprit=run_id,
            fix="Rebuild the workflow with the same nodes, edges and interrupts as when the "
            "run started, or start a new run.",
        )


class IncompatibleMachine(DefinitionError):
    """A stored machine instance does not fit the definition trying to drive it."""

    def __init__(self, instance_id: str, reason: str) -> None:
        self.instance_id = instance_id
        self.reason = reason
        super().__init__(
            f"instance {instance_id!r} cannot follow this machine: {reason}",
            culprit=instance_id,
            fix="Keep the instance's current state in the new definition, or start a new instance.",
        )


# -- state -------------------------------------------------------------------------------


class InvalidState(AgentnbError):
    """A value in the state (or a delta) cannot be stored as JSON.

    Attributes:
        path: where the value sits, e.g. ``state['items'][2]['when']``.
        reason: what is wrong with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{path}: {reason}. State is saved as JSON: use str, int, float, bool, None, "
            "lists and dicts with str keys (convert dates with .isoformat(), sets with list())."
        )


# -- runs --------------------------------------------------------------------------------


class RunError(AgentnbError):
    """Something happened to a run. ``run_id`` names it."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        self.run_id = run_id
        super().__init__(message)


class NodeFailed(RunError):
    """A node raised. The run is ``failed``; the original exception is ``__cause__``."""

    def __init__(self, run_id: str, node: str, step: int, error: BaseException) -> None:
        self.node = node
        self.step = step
        self.error = error
        super().__init__(
            f"node {node!r} failed at step {step} of run {run_id!r}: "
            f"{type(error).__name__}: {error}",
            run_id=run_id,
        )


class NodeTimeout(RunError):
    """A node (or a state machine's action) did not finish within its ``timeout``.

    It was cancelled. ``run_id`` names the run — or the machine instance, for an action.
    """

    def __init__(self, run_id: str, node: str, seconds: float, *, what: str = "node") -> None:
        self.node = node
        self.seconds = seconds
        owner = "run" if what == "node" else "instance"
        super().__init__(
            f"{what} {node!r} of {owner} {run_id!r} did not finish within {seconds:g} s and "
            "was cancelled. Give it a larger timeout= or a retry= policy.",
            run_id=run_id,
        )


class BreakerOpen(RunError):
    """A circuit breaker is open: calls to its dependency fail fast until it cools down."""

    def __init__(
        self,
        breaker: str,
        node: str,
        retry_in: float,
        *,
        run_id: str | None = None,
        what: str = "node",
    ) -> None:
        self.breaker = breaker
        self.node = node
        self.retry_in = retry_in
        again = "continue the run then (run.run())" if what == "node" else "send the event again"
        super().__init__(
            f"circuit breaker {breaker!r} is open after repeated failures, so {what} {node!r} "
            f"was not called. It lets a trial call through in {retry_in:.1f} s; {again}.",
            run_id=run_id,
        )


class RoutingError(RunError):
    """A router raised or returned a target that its edge did not declare."""

    def __init__(self, run_id: str, node: str, message: str) -> None:
        self.node = node
        super().__init__(f"routing after {node!r} in run {run_id!r}: {message}", run_id=run_id)


class ConflictingUpdate(RunError):
    """Two tasks of one superstep wrote the same key, and the key has no reducer.

    Nothing of that superstep is saved: the run fails with its last checkpoint intact.
    """

    def __init__(self, run_id: str, key: str, tasks: tuple[str, str], step: int) -> None:
        self.key = key
        self.tasks = tasks
        self.step = step
        first, second = tasks
        super().__init__(
            f"conflicting update in run {run_id!r}: {first!r} and {second!r} both wrote "
            f"{key!r} in superstep {step}, and {key!r} has no reducer to merge them. Give it "
            f"one (StateGraph(reducers={{{key!r}: operator.add}})) or let one branch write it.",
            run_id=run_id,
        )


class StepBudgetExhausted(RunError):
    """The run executed ``max_steps`` nodes without finishing."""

    def __init__(self, run_id: str, max_steps: int, node: str) -> None:
        self.max_steps = max_steps
        self.node = node
        super().__init__(
            f"step budget exhausted: run {run_id!r} executed max_steps={max_steps} nodes and "
            f"was about to run {node!r}. Look for a loop that never exits, or compile with a "
            "larger max_steps.",
            run_id=run_id,
        )


class RunNotFound(RunError):
    """No run with this id exists in the store."""

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"no run {run_id!r} in this store. List runs with `agentnb runs --db PATH`.",
            run_id=run_id,
        )


class RunBusy(RunError):
    """Another worker is driving the run (it holds an unexpired lease)."""

    def __init__(self, run_id: str, owner: str, expires_at: float) -> None:
        self.owner = owner
        self.expires_at = expires_at
        super().__init__(
            f"run {run_id!r} is being driven by {owner}; its lease expires at "
            f"{expires_at:.3f} (epoch seconds). Wait for it, or attach after it expires.",
            run_id=run_id,
        )


class LeaseLost(RunError):
    """This worker's lease was taken over; its writes are refused (fencing)."""

    def __init__(self, run_id: str, fence: int) -> None:
        self.fence = fence
        super().__init__(
            f"lost the lease on run {run_id!r} (fence {fence}): another worker took it over, "
            "so this worker's step was not saved. Re-attach to see the run's current state.",
            run_id=run_id,
        )


class RunNotActive(RunError):
    """The run cannot be driven in its current status (e.g. it is pending or finished)."""

    def __init__(self, run_id: str, status: str, hint: str) -> None:
        self.status = status
        super().__init__(f"run {run_id!r} is {status}: {hint}", run_id=run_id)


class RunActive(RunError):
    """The run is waiting for a decision or being driven, so it is not deleted."""

    def __init__(self, run_id: str, status: str, worker: str | None = None) -> None:
        self.status = status
        self.worker = worker
        if worker is not None:
            fix = (
                f"worker {worker} holds its lease; a run being driven is never deleted. "
                "Cancel it or wait until it ends, then delete it"
            )
        elif status == "pending":
            fix = (
                "a person is asked to decide it, and a pending approval is never deleted. "
                "Reject it first (agentnb reject RUN --db PATH --as NAME), then delete it"
            )
        else:
            fix = (
                "it was approved and waits for a worker to continue it; deleting it would "
                "drop that decision. Continue or cancel it first, then delete it"
            )
        super().__init__(f"run {run_id!r} is {status}: {fix}", run_id=run_id)


# -- decisions ---------------------------------------------------------------------------


class DecisionError(AgentnbError):
    """An approval or rejection was refused; nothing was changed."""


class InvalidDecision(DecisionError):
    """The decision is not one of ``approved``/``rejected``, or lacks an approver."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ApprovalNotPending(DecisionError):
    """The run exists but is not waiting for a decision (already decided, or never paused)."""

    def __init__(self, run_id: str, status: str, decided_by: str | None = None) -> None:
        self.run_id = run_id
        self.status = status
        self.decided_by = decided_by
        by = f" (decided by {decided_by})" if decided_by else ""
        super().__init__(
            f"run {run_id!r} is not pending approval: its status is '{status}'{by}. "
            "A decision is taken once; check `agentnb show RUN` for who decided."
        )


class TaskNotNamed(DecisionError):
    """Several tasks of the run's superstep await approval, and the decision named none."""

    def __init__(self, run_id: str, tasks: Sequence[str]) -> None:
        self.run_id = run_id
        self.tasks = tuple(tasks)
        listing = ", ".join(repr(t) for t in self.tasks)
        super().__init__(
            f"run {run_id!r} has {len(self.tasks)} tasks awaiting approval ({listing}); "
            "nothing was decided. Name one: run.approve(by=..., task=...)"
        )


class InvalidAnswer(DecisionError):
    """An answer to a node's question does not fit the question's schema; nothing stored."""

    def __init__(self, run_id: str, problems: Sequence[tuple[str, str]]) -> None:
        self.run_id = run_id
        self.problems = tuple(problems)
        listing = "; ".join(f"{path} {what}" for path, what in self.problems)
        super().__init__(
            f"the answer for run {run_id!r} does not fit the question: {listing}. The run is "
            "still waiting; respond again with a value the schema accepts."
        )


class NoQuestion(DecisionError):
    """The run is pending, but at an approval (or a held task) that asks no question."""

    def __init__(self, run_id: str, node: str, task: str | None = None) -> None:
        self.run_id = run_id
        self.node = node
        self.task = task
        where = f"task {task!r}" if task else f"node {node!r}"
        super().__init__(
            f"run {run_id!r} waits for an approval of {where}, not for an answer; nothing "
            "was decided. Approve or reject it (run.approve(by=...) / agentnb approve RUN)"
        )


class ConflictingEdit(DecisionError):
    """An approval's edit replaces a key another task of the superstep already wrote."""

    def __init__(self, run_id: str, task: str, key: str, other: str) -> None:
        self.run_id = run_id
        self.task = task
        self.key = key
        self.other = other
        super().__init__(
            f"run {run_id!r}: the edit approving task {task!r} replaces {key!r}, which "
            f"{other} also writes in this superstep, and {key!r} has no reducer; nothing "
            "was decided. Approve without editing that key, or give it a reducer"
        )


class StaleApproval(DecisionError):
    """The approver saw a pending state whose digest no longer matches the run's."""

    def __init__(self, run_id: str, expected: str, actual: str) -> None:
        self.run_id = run_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"run {run_id!r} changed since it was shown: the approver saw digest "
            f"{expected[:12]}…, the pending state is now {actual[:12]}…. Review it again."
        )


class NotAuthorized(DecisionError):
    """The approver policy of the paused interrupt refuses the identity deciding.

    Attributes:
        run_id: the run.
        node: the node the run is paused at.
        identity: the name of the identity the process vouched for (not the name typed).
        reason: why the policy refused, as written to the audit.
    """

    def __init__(self, run_id: str, node: str | None, identity: str, reason: str) -> None:
        self.run_id = run_id
        self.node = node
        self.identity = identity
        self.reason = reason
        super().__init__(
            f"{identity!r} may not decide run {run_id!r} at {node!r}: {reason}. Nothing was "
            "changed; someone the interrupt's policy allows must decide it (`agentnb show "
            "RUN` lists the approvers)."
        )


class PolicyUnavailable(NotAuthorized):
    """The interrupt's policy is a callable, and this process has not loaded it.

    A process without the workflow's code (the ``agentnb`` CLI, another notebook) cannot
    check it, so it may not decide the run. ``policy`` is the callable's qualified name.
    """

    def __init__(self, run_id: str, node: str | None, identity: str, policy: str) -> None:
        self.policy = policy
        DecisionError.__init__(
            self,
            f"run {run_id!r} at {node!r} may only be decided under the policy {policy!r}, "
            "a function in the workflow's code that this process has not loaded. Nothing was "
            "changed; decide it from a process that loaded the workflow (run.approve(...) or "
            "the panel).",
        )
        self.run_id = run_id
        self.node = node
        self.identity = identity
        self.reason = f"policy {policy} not loaded in this process"


# -- state machines ----------------------------------------------------------------------


class TransitionNotAllowed(AgentnbError):
    """A state machine received an event it does not accept in its current state.

    Attributes:
        event, state: what was sent, and where the instance stood.
        allowed: the events the state declares.
        guards: when the event is declared but every guard refused it, their names.
    """

    def __init__(
        self, event: str, state: str, allowed: Sequence[str], *, guards: Sequence[str] = ()
    ) -> None:
        self.event = event
        self.state = state
        self.allowed = list(allowed)
        self.guards = list(guards)
        allowed_text = ", ".join(repr(a) for a in self.allowed) or "none (final state)"
        if self.guards:
            message = (
                f"event {event!r} was refused in state {state!r}: it has transitions here, "
                f"but none of their guards ({', '.join(self.guards)}) passed with this "
                f"context and payload. Declared now: {allowed_text}."
            )
        else:
            message = f"event {event!r} is not allowed in state {state!r}. Allowed now: " + (
                f"{allowed_text}."
            )
        super().__init__(message)


class InstanceNotFound(AgentnbError):
    """No state-machine instance with this id exists in the store."""

    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        super().__init__(
            f"no machine instance {instance_id!r} in this store. Start one with "
            "machine.start(instance_id=..., store=...)."
        )


# -- storage and environment -------------------------------------------------------------


class StoreError(AgentnbError):
    """The checkpoint store cannot be used (closed, corrupt, unreachable)."""


class SchemaVersionError(StoreError):
    """The database was created by a newer agentnb than this one."""

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
    """

    def __init__(self, where: str, reason: str, fix: str) -> None:
        self.where = where
        self.reason = reason
        self.fix = fix
        super().__init__(f"cannot connect to {where}: {reason}. Fix: {fix}")


class InstanceConflict(StoreError):
    """Another writer moved a machine instance on while this event was being decided."""

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
    """``prune`` was given a duration or a status it cannot use; nothing was deleted."""

    def __init__(self, argument: str, value: object, fix: str) -> None:
        self.argument = argument
        self.value = value
        super().__init__(f"{argument} {value!r} cannot be used: {fix}; nothing was deleted")


# -- teaching ----------------------------------------------------------------------------


class UnknownExercise(AgentnbError):
    """No exercise is registered under this id in :mod:`agentnb.teach`."""

    def __init__(self, exercise_id: str, close: Sequence[str], known: Sequence[str]) -> None:
        self.exercise_id = exercise_id
        self.close = tuple(close)
        self.known = tuple(known)
        suggestion = (
            f"Did you mean {', '.join(repr(c) for c in self.close)}?"
            if self.close
            else f"Known ones: {', '.join(self.known) or 'none'}."
        )
        super().__init__(
            f"there is no exercise {exercise_id!r}. {suggestion} "
            "`agentnb check --list` lists them all."
        )


class ExerciseFailed(AgentnbError, AssertionError):
    """An exercise checked with ``strict=True`` is not done yet (an autograder's failure).

    Attributes:
        result: the :class:`agentnb.teach.Result`: what was recorded, and the hint.
    """

    def __init__(self, result: Any) -> None:
        self.result = result
        super().__init__(f"{result}")


class MissingDependency(AgentnbError):
    """An optional dependency is not installed.

    Attributes:
        package: what is missing.
        extra: the agentnb extra that brings it (``pip install "agentnb[extra]"``).
        purpose: what it was needed for.
        install: how to install it, when pip cannot (a system program such as Graphviz).
    """

    def __init__(
        self, package: str, extra: str, purpose: str, *, install: str | None = None
    ) -> None:
        self.package = package
        self.extra = extra
        self.purpose = purpose
        self.install = install or f'pip install "agentnb[{extra}]"'
        super().__init__(
            f"{package} is needed for {purpose} but is not installed. "
            f"Install it with: {self.install}"
        )


class RenderError(AgentnbError):
    """Graphviz failed, ran out of time, or produced something unsafe.

    Attributes:
        problem: what went wrong.
        detail: what Graphviz said, if anything.
        fix: what to do about it.
    """

    REPORT = (
        "Export the DOT text with draw(obj, 'x.dot') and report it, with `dot -V`, "
        "to the agentnb issue tracker"
    )

    def __init__(self, problem: str, detail: str = "", *, fix: str = REPORT) -> None:
        self.problem = problem
        self.detail = detail
        self.fix = fix
        said = f": {detail.strip()[:500]}" if detail.strip() else ""
        super().__init__(f"{problem}{said}. {fix}")


def describe(error: BaseException) -> dict[str, Any]:
    """A JSON-ready description of an exception, as stored in ``failed`` events."""
    return {"type": type(error).__name__, "message": str(error)}
