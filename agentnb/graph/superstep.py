"""Supersteps: which tasks run next, and in which order their deltas merge — pure functions.

A superstep runs every task the previous one triggered, concurrently. Planning it needs
only the graph and the last checkpoint, never the clock or the process, so any worker
(one restarted after a crash, too) computes the same plan:

* :func:`plan` turns a checkpoint's :class:`Frontier` into :class:`Task` objects in merge
  order — node declaration order; the Sends to one node in the order they were sent;
* :func:`advance` routes the tasks of a finished superstep on the merged state and returns
  the next frontier: plain edges (fan-out), routers' outcomes and :class:`Send` objects,
  and joins whose every source has now run. A node reached several ways runs once.

Example:
    >>> from agentnb import StateGraph
    >>> g = StateGraph("fan")
    >>> for name in ("a", "b", "c"):
    ...     _ = g.add_node(name, lambda state: None)
    >>> wf = g.set_entry_point("a").add_edge("a", "c").add_edge("a", "b").compile()
    >>> frontier, leads = advance(wf, plan(wf, Frontier(("a",))), {})
    >>> [t.id for t in plan(wf, frontier)], leads
    (['b', 'c'], {'a': ['c', 'b']})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentnb._json import check
from agentnb.errors import AgentnbError, InvalidState, RoutingError
from agentnb.graph.builder import END

if TYPE_CHECKING:
    from agentnb.graph.workflow import Workflow

__all__ = ["Frontier", "Send", "Task", "advance", "follow", "plan"]


@dataclass(frozen=True, slots=True)
class Send:
    """One task for ``node`` with ``payload`` laid over its copy of the state (map-reduce).

    A conditional edge's router returns one or a list of them; ``node`` must be one of the
    edge's declared targets. Each Send is its own task in the next superstep, and the
    tasks' deltas are merged by the reducers in the order they were sent.

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
                f"Send({self.node!r}, {self.payload!r}): the payload is a dict of state keys "
                "laid over the task's copy of the state"
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
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Frontier:
        return cls(
            tuple(data.get("nodes", ())),
            tuple(Send(n, p) for n, p in data.get("sends", ())),
            tuple((int(j), tuple(a)) for j, a in data.get("waiting", ())),
        )

    @classmethod
    def at(cls, node: str, tasks: Mapping[str, Any] | None = None) -> Frontier:
        """The frontier a checkpoint stores: ``tasks`` when saved, else just ``node``."""
        if tasks is not None:
            return cls.from_json(tasks)
        return cls(() if node == END else (node,))


def plan(workflow: Workflow, frontier: Frontier) -> tuple[Task, ...]:
    """The tasks of the superstep ``frontier`` starts, in merge order."""
    single = frontier.single
    if single is not None:
        return (Task(single, single),)
    order = workflow.order
    tasks = [Task(n, n) for n in frontier.nodes if n != END]
    sent: dict[str, int] = {}
    for send in frontier.sends:
        i = sent.get(send.node, 0)
        sent[send.node] = i + 1
        tasks.append(Task(f"{send.node}[{i}]", send.node, send.payload))
    # Stable: a node's plain task first, then its Sends in the order they were sent.
    tasks.sort(key=lambda t: (order.get(t.node, len(order)), t.payload is not None))
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
) -> tuple[Frontier, dict[str, list[str]]]:
    """The frontier after ``tasks`` ran and their deltas merged into ``state``.

    Routers see the merged state of the whole superstep. ``waiting`` is the finished
    superstep's frontier's join arrivals. Also returns where each task led (by task id:
    nodes, ``END``, the node of each Send, a join's target once it fires) — the edges a
    diagram counts as traversed.
    """
    triggered: set[str] = set()
    sends: list[Send] = []
    leads: dict[str, list[str]] = {}
    arrived = {j: set(a) for j, a in waiting}
    joined: dict[int, list[str]] = {}
    for task in tasks:
        nodes, sent = follow(workflow, task.node, state, run_id=run_id)
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
    order = workflow.order
    frontier = Frontier(
        tuple(sorted(triggered, key=lambda n: order.get(n, len(order)))),
        tuple(sends),
        tuple((j, tuple(sorted(a, key=order.__getitem__))) for j, a in sorted(arrived.items())),
    )
    return frontier, leads
