"""Subgraphs: a graph run as a node, as a run of its own nested under the parent's.

The child run lives in the parent's store with the id ``<parent id>/<task id>@<step>``, so
the runs of one tree sort together and any process finds a run's children
(``run.children()``). Driving the parent's task drives the child: to its end (its changed
keys, or ``output_keys``, become the task's delta), to a pause (the parent pauses too, and
is decided from the parent), or — when the parent is being stepped — one superstep of the
child at a time. Re-running the parent's task after a pause, a step or a crash attaches to
the same child run and continues it: nothing the child did is done twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentnb.errors import NodeFailed, RunNotFound
from agentnb.graph.copies import StateCopy
from agentnb.store.records import Status

if TYPE_CHECKING:
    from agentnb.graph.builder import NodeSpec
    from agentnb.graph.run import Run
    from agentnb.graph.superstep import Task
    from agentnb.graph.workflow import Workflow
    from agentnb.store.records import Event

__all__ = ["ChildPaused", "ChildStepped", "child_id", "children", "drive_child"]


class ChildPaused(BaseException):
    """The child run paused at an interrupt: the parent pauses with it."""

    def __init__(self, child: str, digest: str | None) -> None:
        super().__init__(child)
        self.child, self.digest = child, digest


class ChildStepped(BaseException):
    """The parent is being stepped and the child ran one superstep without finishing."""

    def __init__(self, child: str, events: list[Event]) -> None:
        super().__init__(child)
        self.child, self.events = child, events


def child_id(run_id: str, task: Task, step: int) -> str:
    return f"{run_id}/{task.id}@{step}"


async def drive_child(
    workflow: Workflow,
    run_id: str,
    task: Task,
    step: int,
    state: dict[str, Any],
    *,
    stepping: bool,
    approved_by: str | None = None,
) -> dict[str, Any]:
    """Drive the child run of subgraph task ``task``; return the parent's delta.

    Raises:
        ChildPaused: the child waits for a decision.
        ChildStepped: ``stepping``, and the child is not finished yet.
        NodeFailed: the child failed (its error is the cause).
    """
    from agentnb.graph.run import Run

    spec = workflow.nodes[task.node]
    child_workflow = workflow._child(task.node)
    name = child_id(run_id, task, step)
    # The child's input passes through the child's reducers, as any run's input does
    # (LangGraph's subgraph: a custom reducer of the child sees ``default, input``).
    start = child_workflow.first_state(_input(spec, state, task.payload))
    try:  # read off the loop; a new child's start (and its listeners) stays on it
        child = await workflow.checkpointer.offload(Run._attach, child_workflow, name)
    except RunNotFound:
        child = Run._create(child_workflow, start, name)
    if approved_by and child._record.status == Status.PENDING and not child._questions():
        # The parent was approved where only the parent is known (the CLI, a panel): the
        # approval was of this pause, so the child records it too, by the same approver.
        comment = f"approved on the parent run {run_id}"
        child.decide("approved", by=approved_by, comment=comment, task=_only(child))
    events: list[Event] = []
    try:
        async for event in child._drive(1 if stepping else None):
            events.append(event)
    except Exception as exc:
        raise NodeFailed(run_id, task.node, step, exc) from exc
    status = child._record.status
    if status == Status.PENDING:
        raise ChildPaused(name, child._record.pending_digest)
    if status != Status.COMPLETED:
        if stepping and status in (Status.RUNNING, Status.APPROVED):
            raise ChildStepped(name, events)
        raise NodeFailed(
            run_id, task.node, step, RuntimeError(f"subgraph run {name!r} ended {status}")
        )
    return _output(spec, start, child._state)


def _only(child: Run) -> str | None:
    held = child.pending()
    return held[0].task_id if len(held) == 1 else None


def _input(spec: NodeSpec, live: dict[str, Any], payload: dict[str, Any] | None) -> dict[str, Any]:
    """The child's first state: a copy of the keys it takes (of a Send's payload: its
    whole input, as for any node)."""
    view = StateCopy(live if payload is None else payload)
    if spec.input_keys is not None:
        return {k: view[k] for k in spec.input_keys if k in view}
    return view.copy()


def _output(spec: NodeSpec, start: dict[str, Any], final: dict[str, Any]) -> dict[str, Any]:
    keys = spec.output_keys if spec.output_keys is not None else list(final)
    return {k: final[k] for k in keys if k in final and final[k] != start.get(k, _MISSING)}


_MISSING = object()


def children(run: Run) -> list[Run]:
    """The runs of ``run``'s subgraph nodes, oldest first."""
    from agentnb.graph.run import Run

    prefix = f"{run.run_id}/"
    found = []
    for record in sorted(run._store.list_runs(), key=lambda r: r.created_at):
        rest = record.run_id[len(prefix) :] if record.run_id.startswith(prefix) else None
        if rest is None or "/" in rest:
            continue
        node = rest.rpartition("@")[0].partition("[")[0]
        if node in run.workflow.nodes and run.workflow.nodes[node].subgraph is not None:
            found.append(Run._attach(run.workflow._child(node), record.run_id))
    return found
