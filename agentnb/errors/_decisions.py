"""Refused approvals, rejections and answers: nothing was decided."""

from __future__ import annotations

from collections.abc import Sequence

from agentnb.errors._root import AgentnbError


class DecisionError(AgentnbError):
    """An approval or rejection was refused; nothing was changed.

    Example:
        Every refused decision is one of these:

        >>> from agentnb import DecisionError, StateGraph
        >>> graph = StateGraph("one").add_node("a", lambda state: {}).set_entry_point("a")
        >>> run = graph.compile().invoke({})
        >>> try:
        ...     run.approve(by="ada")  # nothing is waiting for a decision
        ... except DecisionError as error:
        ...     print(type(error).__name__)
        ApprovalNotPending
    """


class InvalidDecision(DecisionError):
    """The decision is not one of ``approved``/``rejected``, or lacks an approver.

    Example:
        >>> from agentnb import InvalidDecision, StateGraph
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> run = graph.add_interrupt_before("pay").compile().start({})
        >>> _ = run.step()
        >>> try:
        ...     run.decide("maybe", by="ada")
        ... except InvalidDecision as error:
        ...     print(error)
        decision must be 'approved' or 'rejected', not 'maybe'; nothing was changed...
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ApprovalNotPending(DecisionError):
    """The run exists but is not waiting for a decision (already decided, or never paused).

    Example:
        >>> from agentnb import ApprovalNotPending, StateGraph
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> run = graph.add_interrupt_before("pay").compile().start({})
        >>> _ = run.step()
        >>> run.approve(by="ada").accepted
        True
        >>> try:
        ...     run.approve(by="bob")  # decided exactly once
        ... except ApprovalNotPending as error:
        ...     print(error.status, error.decided_by)
        approved ada
    """

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
    """Several tasks of the run's superstep await approval, and the decision named none.

    Example:
        >>> from agentnb.errors import TaskNotNamed
        >>> print(TaskNotNamed("r1", ["left", "right"]))  # two parallel tasks wait: say which
        run 'r1' has 2 tasks awaiting approval ('left', 'right'); nothing was decided. Name one:
        run.approve(by=..., task=...)
    """

    def __init__(self, run_id: str, tasks: Sequence[str]) -> None:
        self.run_id = run_id
        self.tasks = tuple(tasks)
        listing = ", ".join(repr(t) for t in self.tasks)
        super().__init__(
            f"run {run_id!r} has {len(self.tasks)} tasks awaiting approval ({listing}); "
            "nothing was decided. Name one: run.approve(by=..., task=...)"
        )


class InvalidAnswer(DecisionError):
    """An answer to a node's question does not fit the question's schema; nothing stored.

    Example:
        >>> from agentnb import InvalidAnswer
        >>> error = InvalidAnswer("r1", [("$.amount", "expected an integer")])
        >>> error.problems
        (('$.amount', 'expected an integer'),)
    """

    def __init__(self, run_id: str, problems: Sequence[tuple[str, str]]) -> None:
        self.run_id = run_id
        self.problems = tuple(problems)
        listing = "; ".join(f"{path} {what}" for path, what in self.problems)
        super().__init__(
            f"the answer for run {run_id!r} does not fit the question: {listing}. The run is "
            "still waiting; respond again with a value the schema accepts."
        )


class NoQuestion(DecisionError):
    """The run is pending, but at an approval (or a held task) that asks no question.

    Example:
        >>> from agentnb import NoQuestion, StateGraph
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> run = graph.add_interrupt_before("pay").compile().start({})
        >>> _ = run.step()  # paused for approval, not asked a question
        >>> try:
        ...     run.respond({"amount": 5}, by="ada")
        ... except NoQuestion as error:
        ...     print(type(error).__name__, error.run_id == run.run_id)
        NoQuestion True
    """

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
    """An approval's edit replaces a key another task of the superstep already wrote.

    Example:
        >>> from agentnb import ConflictingEdit
        >>> error = ConflictingEdit("r1", "left", "total", "right")
        >>> error.key
        'total'
    """

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
    """The approver saw a pending state whose digest no longer matches the run's.

    Example:
        >>> from agentnb import StaleApproval, StateGraph
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> run = graph.add_interrupt_before("pay").compile().start({})
        >>> _ = run.step()
        >>> try:
        ...     run.approve(by="ada", expected_digest="what-ada-saw-earlier")
        ... except StaleApproval as error:
        ...     print(error.actual == run.pending_digest)
        True
    """

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

    Example:
        >>> from agentnb import Identity, MemoryCheckpointer, NotAuthorized, StateGraph
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> graph.add_interrupt_before("pay", approvers=["group:finance"])
        StateGraph('pay', nodes=['pay'])
        >>> store = MemoryCheckpointer(identity=lambda: Identity("bob", groups=["sales"]))
        >>> run = graph.compile(store).start({})
        >>> _ = run.step()
        >>> try:
        ...     run.approve(by="bob")
        ... except NotAuthorized as error:
        ...     print(error.identity)
        bob
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

    Example:
        >>> from agentnb import NotAuthorized, PolicyUnavailable
        >>> error = PolicyUnavailable("r1", "pay", "ada", "policies:finance_only")
        >>> isinstance(error, NotAuthorized)  # refused, like any unauthorised decision
        True
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
