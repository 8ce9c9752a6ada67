"""Supersteps: which tasks run next, and in which order their deltas merge — pure functions.

A superstep runs every task the previous one triggered, concurrently. Planning it needs
only the graph and the last checkpoint, never the clock or the process, so any worker
(one restarted after a crash, too) computes the same plan:

* :func:`plan` turns a checkpoint's :class:`Frontier` into :class:`Task` objects in merge
  order, LangGraph's task-path order: the triggered nodes by name, then every Send in the
  order it was sent;
* :func:`advance` routes the tasks of a finished superstep and returns the next frontier:
  plain edges (fan-out), routers' outcomes and :class:`Send` objects, and joins whose
  every source has now run. A router reads the state as its own task left it: the
  superstep's start plus that task's writes (LangGraph's view), not its siblings'. A node
  reached several ways runs once.

Example:
    >>> from agentnb import StateGraph
    >>> g = StateGraph("fan")
    >>> for name in ("a", "b", "c"):
    ...     _ = g.add_node(name, lambda state: None)
    >>> wf = g.set_entry_point("a").add_edge("a", "c").add_edge("a", "b").compile()
    >>> frontier, leads = advance(wf, plan(wf, Frontier(("a",))), {})
    >>> [t.id for t in plan(wf, frontier)], leads
    (['b', 'c'], {'a': ['c', 'b']})
    >>> frontier  # by name, whatever order the edges were declared in
    Frontier(nodes=('b', 'c'), sends=(), waiting=(), semantics=1)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentnb._json import check
from agentnb.errors import AgentnbError, InvalidState, LegacySuperstep, RoutingError
from agentnb.graph.builder import END

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow

__all__ = [
    "Frontier",
    "Send",
    "Task",
    "advance",
    "follow",
    "legacy_frontier",
    "plan",
    "supersteps_allowed",
]


@dataclass(frozen=True, slots=True)
class Send:
    """One task for ``node`` whose whole input is ``payload`` (map-reduce), as in LangGraph.

    A conditional edge's router returns one or a list of them; ``node`` must be one of the
    edge's declared targets. Each Send is its own task in the next superstep (the node
    reads ``payload``, not the run's state), and the tasks' deltas are merged by the
    reducers in the order they were sent, after the superstep's other tasks.

    Example:
        >>> Send("summarise", {"doc": "a.txt"})
        Send('summarise', {'doc': 'a.txt'})
    """

    node: str
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.node, str) or not self.node:
            raise AgentnbError(f"Send({self.node!r}, ...): name the target node with a string")
        if not isinstance(self.payload, Mapping):
            raise AgentnbError(
                f"Send({self.node!r}, {self.payload!r}): the payload is the task's input, "
                "a dict (LangGraph also takes any value; agentnb stores and shows it as a "
                "state). Wrap it: Send(node, {'item': value})"
            )
        object.__setattr__(self, "payload", dict(self.payload))

    def __repr__(self) -> str:
        return f"Send({self.node!r}, {self.payload!r})"


@dataclass(frozen=True, slots=True)
class Task:
    """One node to call in a superstep.

    ``id`` is the node's name, or ``node[i]`` for the i-th Send to it in this superstep;
    with the run and the superstep it names the task's saved result and its ``ctx.once``
    effects.
    """

    id: str
    node: str
    payload: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Frontier:
    """What the next superstep runs: nodes triggered by edges, Sends, and joins' arrivals.

    ``waiting`` holds, per join (its index in ``workflow.joins``), the sources that have
    run so far; the join's target is triggered once all of them have.
    """

    nodes: tuple[str, ...] = ()
    sends: tuple[Send, ...] = ()
    waiting: tuple[tuple[int, tuple[str, ...]], ...] = ()
    semantics: int = 1
    """``1``: planned with LangGraph's semantics (merge by task path, a router's own view,
    a Send's payload as the whole input). ``0``: stored by an agentnb before them, whose
    tasks merged in declaration order, routed on the merged state and laid a Send's
    payload over the state; see :func:`legacy_refusal`."""

    @property
    def single(self) -> str | None:
        """The node, when the frontier is exactly one plain node (a linear run's case)."""
        if len(self.nodes) == 1 and not self.sends and not self.waiting:
            return self.nodes[0]
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": list(self.nodes),
            "sends": [[s.node, s.payload] for s in self.sends],
            "waiting": [[j, list(arrived)] for j, arrived in self.waiting],
            "semantics": self.semantics,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Frontier:
        return cls(
            tuple(data.get("nodes", ())),
            tuple(Send(n, p) for n, p in data.get("sends", ())),
            tuple((int(j), tuple(a)) for j, a in data.get("waiting", ())),
            int(data.get("semantics", 0)),
        )

    @classmethod
    def at(cls, node: str, tasks: Mapping[str, Any] | None = None) -> Frontier:
        """The frontier a checkpoint stores: ``tasks`` when saved, else just ``node``."""
        if tasks is not None:
            return cls.from_json(tasks)
        return cls(() if node == END else (node,))


def plan(workflow: Workflow, frontier: Frontier) -> tuple[Task, ...]:
    """The tasks of the superstep ``frontier`` starts, in merge order: the nodes by name,
    then the Sends in the order they were sent (LangGraph's task paths)."""
    single = frontier.single
    if single is not None:
        return (Task(single, single),)
    tasks = [Task(n, n) for n in sorted(frontier.nodes) if n != END]
    sent: dict[str, int] = {}
    for send in frontier.sends:
        i = sent.get(send.node, 0)
        sent[send.node] = i + 1
        tasks.append(Task(f"{send.node}[{i}]", send.node, send.payload))
    return tuple(tasks)


def follow(
    workflow: Workflow, node: str, state: dict[str, Any], *, run_id: str = "?"
) -> tuple[list[str], list[Send]]:
    """Where ``node`` leads when the state is ``state``: nodes (``END`` included) and Sends.

    Joins are not included (see :func:`advance`). A node with no edge of any kind leads
    to ``END``.

    Raises:
        RoutingError: the router raised, returned an undeclared outcome, or sent a task to
            a node its edge does not declare.
    """
    targets = list(workflow.edges.get(node, ()))
    sends: list[Send] = []
    branch = workflow.branches.get(node)
    if branch is not None:
        try:
            outcome = branch.router(state)
        except Exception as exc:
            raise RoutingError(
                run_id, node, f"the router raised {type(exc).__name__}: {exc}"
            ) from exc
        answers = outcome if isinstance(outcome, list | tuple) else [outcome]
        declared = set(branch.targets.values())
        for answer in answers:
            if isinstance(answer, Send):
                if answer.node not in declared or answer.node == END:
                    raise RoutingError(
                        run_id,
                        node,
                        f"the router sent a task to {answer.node!r}, which is not a declared "
                        f"node target ({', '.join(repr(t) for t in sorted(declared))}). "
                        "Declare it in add_conditional_edge(..., targets)",
                    )
                try:
                    check(answer.payload, root=f"Send({answer.node!r}) payload")
                except InvalidState as exc:
                    raise RoutingError(run_id, node, str(exc)) from exc
                sends.append(answer)
                continue
            target = branch.targets.get(answer) if isinstance(answer, str) else None
            if target is None:
                listed = ", ".join(repr(t) for t in branch.targets)
                raise RoutingError(
                    run_id,
                    node,
                    f"the router returned {answer!r}, which is not a declared target "
                    f"({listed}). Declare it in add_conditional_edge(..., targets) or fix "
                    "the router",
                )
            targets.append(target)
    elif not targets and node not in workflow.joined:
        targets.append(END)
    return targets, sends


def advance(
    workflow: Workflow,
    tasks: Sequence[Task],
    state: dict[str, Any],
    waiting: Sequence[tuple[int, tuple[str, ...]]] = (),
    *,
    run_id: str = "?",
    views: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[Frontier, dict[str, list[str]]]:
    """The frontier after ``tasks`` ran.

    Each task's router reads ``views[task.id]``: the superstep's start plus that task's
    own writes (LangGraph's view); ``state`` when no view is given (a superstep of one
    task, whose view is the merged state). ``waiting`` is the finished superstep's
    frontier's join arrivals. Also returns where each task led (by task id:
    nodes, ``END``, the node of each Send, a join's target once it fires) — the edges a
    diagram counts as traversed.
    """
    triggered: set[str] = set()
    sends: list[Send] = []
    leads: dict[str, list[str]] = {}
    arrived = {j: set(a) for j, a in waiting}
    joined: dict[int, list[str]] = {}
    for task in tasks:
        view = state if views is None else views[task.id]
        nodes, sent = follow(workflow, task.node, view, run_id=run_id)
        triggered.update(nodes)
        sends += sent
        leads[task.id] = [*nodes, *(s.node for s in sent)]
        if task.node in workflow.joined:
            for j, join in enumerate(workflow.joins):
                if task.node in join.sources:
                    arrived.setdefault(j, set()).add(task.node)
                    joined.setdefault(j, []).append(task.id)
    for j, join in enumerate(workflow.joins):
        if j in arrived and arrived[j].issuperset(join.sources):
            triggered.add(join.target)
            del arrived[j]
            for task_id in joined.get(j, ()):
                leads[task_id].append(join.target)
    triggered.discard(END)
    frontier = Frontier(
        tuple(sorted(triggered)),
        tuple(sends),
        tuple((j, tuple(sorted(a))) for j, a in sorted(arrived.items())),
    )
    return frontier, leads


def supersteps_allowed(limit: int | None, first: bool) -> int | None:
    """How many supersteps one invocation may run and still end or pause, for
    ``recursion_limit=limit`` counted as LangGraph counts it: the input takes two of a
    run's ``first`` invocation's steps (``limit - 1``); a resumed one starts past the
    checkpoint's (``limit + 1``). ``None``: no such limit.

    Example:
        >>> supersteps_allowed(5, first=True), supersteps_allowed(5, first=False)
        (4, 6)
    """
    if limit is None:
        return None
    return limit - 1 if first else limit + 1


def legacy_frontier(
    workflow: Workflow, frontier: Frontier, state: dict[str, Any], run_id: str, step: int
) -> Frontier:
    """A frontier stored before LangGraph's semantics (``semantics == 0``), migrated, or
    refused when its meaning changed.

    One plain task means the same under both. One Send task laid its payload over the
    state: its whole input is now that, so its meaning is kept. Several plain tasks mean
    the same when their declaration order is their name order and none has a router
    (which read the merged state then). Other parallel supersteps (Sends among several
    tasks, another order, a router) have no migration that keeps their meaning, so the
    run is refused rather than continued to another answer.

    Raises:
        LegacySuperstep: the superstep's meaning changed.
    """
    tasks = plan(workflow, frontier)
    if len(tasks) > 1:
        order = workflow.order
        declared = sorted(tasks, key=lambda t: (order.get(t.node, len(order)), t.id))
        if (
            frontier.sends
            or declared != list(tasks)
            or any(t.node in workflow.branches for t in tasks)
        ):
            raise LegacySuperstep(run_id, step, [t.id for t in tasks])
    sends = tuple(Send(s.node, {**state, **s.payload}) for s in frontier.sends)
    return Frontier(frontier.nodes, sends, frontier.waiting)
