"""Errors of a run: its state, its nodes, its routing, its lease and its status."""

from __future__ import annotations

from agentnb.errors._root import AgentnbError


class InvalidState(AgentnbError):
    """A value in the state (or a delta) cannot be stored as JSON.

    Attributes:
        path: where the value sits, e.g. ``state['items'][2]['when']``.
        reason: what is wrong with it.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = StateGraph("s").add_node("a", lambda state: {}).set_entry_point("a")
        >>> workflow = graph.compile()
        >>> workflow.start({"tags": {"a", "b"}})  # a set is not JSON
        Traceback (most recent call last):
        ...
        agentnb.errors.InvalidState: state['tags']: a builtins.set is not JSON. State is saved as
        JSON:...
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(
            f"{path}: {reason}. State is saved as JSON: use str, int, float, bool, None, "
            "lists and dicts with str keys (convert dates with .isoformat(), sets with list())."
        )


class RunError(AgentnbError):
    """Something happened to a run. ``run_id`` names it.

    Example:
        Every error about one run says which run:

        >>> from agentnb import MemoryCheckpointer, RunError
        >>> try:
        ...     MemoryCheckpointer().get_run("r9")
        ... except RunError as error:
        ...     print(error.run_id)
        r9
    """

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        self.run_id = run_id
        super().__init__(message)


class NodeFailed(RunError):
    """A node raised. The run is ``failed``; the original exception is ``__cause__``.

    Example:
        >>> from agentnb import NodeFailed, StateGraph
        >>> def charge(state):
        ...     raise ConnectionError("card service down")
        >>> graph = StateGraph("pay").add_node("charge", charge).set_entry_point("charge")
        >>> run = graph.compile().start({})
        >>> try:
        ...     run.run()
        ... except NodeFailed as error:
        ...     print(error.node, error.step, repr(error.__cause__))
        charge 0 ConnectionError('card service down')
        >>> str(run.status)  # the run is failed, its last checkpoint intact
        'failed'
    """

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

    Example:
        >>> from agentnb import NodeTimeout
        >>> error = NodeTimeout("r1", "fetch", 2.0)  # what a node with timeout=2.0 raises
        >>> print(error)
        node 'fetch' of run 'r1' did not finish within 2 s and was cancelled. Give it a larger
        timeout= or a retry= policy.
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
    """A circuit breaker is open: calls to its dependency fail fast until it cools down.

    Example:
        >>> from agentnb import BreakerOpen, CircuitBreaker, StateGraph
        >>> breaker = CircuitBreaker("payments", failures=1, reset_after=60)
        >>> breaker.failure()  # one failure opens this breaker
        >>> graph = StateGraph("pay").add_node("charge", lambda state: {}, breaker=breaker)
        >>> try:
        ...     graph.set_entry_point("charge").compile().invoke({})
        ... except BreakerOpen as error:
        ...     print(error.breaker, error.node)
        payments charge
    """

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
    """A router raised or returned a target that its edge did not declare.

    Example:
        >>> from agentnb import RoutingError, StateGraph
        >>> graph = (
        ...     StateGraph("route")
        ...     .add_node("a", lambda state: {})
        ...     .add_node("b", lambda state: {})
        ...     .set_entry_point("a")
        ...     .add_conditional_edge("a", lambda state: "elsewhere", {"next": "b"})
        ... )
        >>> try:
        ...     graph.compile().invoke({})
        ... except RoutingError as error:
        ...     print(error.node)
        a
    """

    def __init__(self, run_id: str, node: str, message: str) -> None:
        self.node = node
        super().__init__(f"routing after {node!r} in run {run_id!r}: {message}", run_id=run_id)


class ConflictingUpdate(RunError):
    """Two tasks of one superstep wrote the same key, and the key has no reducer.

    Nothing of that superstep is saved: the run fails with its last checkpoint intact.

    Example:
        Two branches of one superstep write ``total``, which has no reducer:

        >>> from agentnb import ConflictingUpdate, StateGraph
        >>> graph = (
        ...     StateGraph("fan")
        ...     .add_node("split", lambda state: {})
        ...     .add_node("left", lambda state: {"total": 1})
        ...     .add_node("right", lambda state: {"total": 2})
        ...     .set_entry_point("split")
        ...     .add_edge("split", "left")
        ...     .add_edge("split", "right")
        ... )
        >>> try:
        ...     graph.compile().invoke({})
        ... except ConflictingUpdate as error:
        ...     print(error.key, error.tasks)
        total ('left', 'right')
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
    """The run executed ``max_steps`` nodes without finishing.

    Example:
        >>> from agentnb import StateGraph, StepBudgetExhausted
        >>> graph = StateGraph("loop").add_node("again", lambda state: {}).set_entry_point("again")
        >>> graph.add_edge("again", "again")  # never exits
        StateGraph('loop', nodes=['again'])
        >>> try:
        ...     graph.compile(max_steps=3).invoke({})
        ... except StepBudgetExhausted as error:
        ...     print(error.max_steps, error.node)
        3 again
    """

    def __init__(self, run_id: str, max_steps: int, node: str) -> None:
        self.max_steps = max_steps
        self.node = node
        super().__init__(
            f"step budget exhausted: run {run_id!r} executed max_steps={max_steps} nodes and "
            f"was about to run {node!r}. Look for a loop that never exits, or compile with a "
            "larger max_steps.",
            run_id=run_id,
        )


class StepNotCommitted(RunError):
    """A worker drove a run's step again and again, and it never got as far as a commit.

    Its node ran, or its checkpoint would not load, but the step's commit (or the run's
    loading) raised something other than the store being unreachable. The worker tried
    again after waits that double, then recorded the run ``failed`` at ``node`` (its
    last checkpoint intact) rather than run the node — and repeat its side effects —
    forever. ``error`` is what the last attempt raised (also the ``__cause__``).

    Example:
        >>> from agentnb import StepNotCommitted
        >>> error = StepNotCommitted("r1", "pay", 2, 5, ValueError("bad row"))
        >>> error.attempts, error.__class__.__mro__[1].__name__
        (5, 'RunError')
        >>> print(error)
        run 'r1' could not commit its step at node 'pay' (step 2) in 5 attempts (ValueError: bad
        row), so it is failed there....
    """

    def __init__(
        self, run_id: str, node: str, step: int, attempts: int, error: BaseException
    ) -> None:
        self.node = node
        self.step = step
        self.attempts = attempts
        self.error = error
        super().__init__(
            f"run {run_id!r} could not commit its step at node {node!r} (step {step}) in "
            f"{attempts} attempts ({type(error).__name__}: {error}), so it is failed there. "
            "Fix what the error says, then fork the run from its last checkpoint "
            "(run.fork()).",
            run_id=run_id,
        )


class RecursionLimitReached(StepBudgetExhausted):
    """The run passed ``recursion_limit`` supersteps in one invocation, as LangGraph
    counts them (its ``GraphRecursionError``). The run is ``failed``.

    Example:
        >>> from agentnb import RecursionLimitReached, StateGraph
        >>> graph = StateGraph("loop").add_node("again", lambda state: {}).set_entry_point("again")
        >>> graph.add_edge("again", "again")
        StateGraph('loop', nodes=['again'])
        >>> try:
        ...     graph.compile(recursion_limit=4).invoke({})
        ... except RecursionLimitReached as error:
        ...     print(error.recursion_limit, error.node)
        4 again
    """

    def __init__(self, run_id: str, recursion_limit: int, node: str) -> None:
        self.recursion_limit = recursion_limit
        self.max_steps = recursion_limit
        self.node = node
        RunError.__init__(
            self,
            f"recursion limit reached: run {run_id!r} ran past recursion_limit="
            f"{recursion_limit} supersteps in one invocation without ending or pausing, "
            f"and was about to go on at {node!r}. Look for a loop that never exits, or "
            "compile with a larger recursion_limit.",
            run_id=run_id,
        )


class LegacySuperstep(RunError):
    """The run waits in a parallel superstep planned before agentnb adopted LangGraph's
    superstep semantics; continuing it would give a different answer than it promised.

    Example:
        >>> from agentnb import LegacySuperstep
        >>> print(LegacySuperstep("r1", 3, ["left", "right"]))
        run 'r1' waits in superstep 3 (left, right), planned by an agentnb older than ...
        (run.fork(step=2))...
    """

    def __init__(self, run_id: str, step: int, tasks: list[str]) -> None:
        self.step = step
        self.tasks = tasks
        super().__init__(
            f"run {run_id!r} waits in superstep {step} ({', '.join(tasks)}), planned by an "
            "agentnb older than its LangGraph semantics (merge by task path, each router "
            "on its own task's writes, a Send's payload as the whole input); continuing it "
            "now could give another state than the one it was planned for, so it is not "
            "continued. Finish it with the agentnb that started it, or fork it from an "
            f"earlier step (run.fork(step={max(step - 1, 0)})) to replay it under the current "
            "semantics.",
            run_id=run_id,
        )


class RunNotFound(RunError):
    """No run with this id exists in the store.

    Example:
        >>> from agentnb import MemoryCheckpointer
        >>> MemoryCheckpointer().get_run("nope")
        Traceback (most recent call last):
        ...
        agentnb.errors.RunNotFound: no run 'nope' in this store. List runs with `agentnb runs --db
        PATH`.
    """

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"no run {run_id!r} in this store. List runs with `agentnb runs --db PATH`.",
            run_id=run_id,
        )


class RunBusy(RunError):
    """Another worker is driving the run (it holds an unexpired lease).

    Example:
        >>> from agentnb import RunBusy
        >>> error = RunBusy("r1", "worker-7", 1700000000.0)  # what attaching to a driven run raises
        >>> error.owner
        'worker-7'
        >>> print(error)
        run 'r1' is being driven by worker-7; its lease expires at 1700000000.000 (epoch
        seconds)....
    """

    def __init__(self, run_id: str, owner: str, expires_at: float) -> None:
        self.owner = owner
        self.expires_at = expires_at
        super().__init__(
            f"run {run_id!r} is being driven by {owner}; its lease expires at "
            f"{expires_at:.3f} (epoch seconds). Wait for it, or attach after it expires.",
            run_id=run_id,
        )


class LeaseLost(RunError):
    """This worker's lease was taken over; its writes are refused (fencing).

    Example:
        >>> from agentnb import LeaseLost
        >>> print(LeaseLost("r1", fence=4))
        lost the lease on run 'r1' (fence 4): another worker took it over, so this worker's step was
        not saved....
    """

    def __init__(self, run_id: str, fence: int) -> None:
        self.fence = fence
        super().__init__(
            f"lost the lease on run {run_id!r} (fence {fence}): another worker took it over, "
            "so this worker's step was not saved. Re-attach to see the run's current state.",
            run_id=run_id,
        )


class RunNotActive(RunError):
    """The run cannot be driven in its current status (e.g. it is pending or finished).

    Example:
        >>> from agentnb import RunError, RunNotActive
        >>> error = RunNotActive("r1", "completed", "fork it to run it again (run.fork())")
        >>> isinstance(error, RunError), error.status
        (True, 'completed')
        >>> print(error)
        run 'r1' is completed: fork it to run it again (run.fork())
    """

    def __init__(self, run_id: str, status: str, hint: str) -> None:
        self.status = status
        super().__init__(f"run {run_id!r} is {status}: {hint}", run_id=run_id)


class RunActive(RunError):
    """The run is waiting for a decision or being driven, so it is not deleted.

    Example:
        >>> from agentnb import MemoryCheckpointer, RunActive, StateGraph
        >>> store = MemoryCheckpointer()
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> run = graph.add_interrupt_before("pay").compile(store).start({}, run_id="r1")
        >>> _ = run.step()  # now pending: a person is asked to decide
        >>> try:
        ...     store.delete_run("r1")
        ... except RunActive as error:
        ...     print(error.status)
        pending
    """

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
