"""``RunHandle``: a process's copy of where a run stands, kept in step with its row.

What :class:`~agentnb.graph.run.Run` and its decisions share: the run's row as last seen,
its live state (in the process while it drives the run), the next tasks and the stored
chain the next checkpoint extends — reloaded from the store only when the row moved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from agentnb.errors import IncompatibleWorkflow
from agentnb.graph.builder import END
from agentnb.graph.superstep import Frontier
from agentnb.store.base import new_owner
from agentnb.store.chains import Chain
from agentnb.store.records import RunRecord

if TYPE_CHECKING:
    from agentnb.graph.driver import Position
    from agentnb.graph.workflow import Workflow

__all__ = ["RunHandle"]


class RunHandle:
    """A handle on a run's row: the truth is in the checkpointer, this is its copy."""

    def __init__(
        self,
        workflow: Workflow,
        record: RunRecord,
        *,
        loaded: tuple[dict[str, Any], dict[str, Any] | None] | None = None,
    ) -> None:
        """``loaded``: the state and tasks of ``record``'s checkpoint, when the caller has
        them (it has just written it); else they are read from the store."""
        self.workflow = workflow
        self.run_id = record.run_id
        self.owner = new_owner()
        self._store = workflow.checkpointer
        self._record = record
        self._state: dict[str, Any] = {}
        self._frontier = Frontier.at(record.node)
        self._chain: Chain | None = None
        if loaded is None:
            self._load_state(record)
        else:
            self._state, tasks = loaded
            self._frontier = Frontier.at(record.node, tasks)

    @classmethod
    def _attach(cls, workflow: Workflow, run_id: str) -> Self:
        record = workflow.checkpointer.get_run(run_id)
        _check_compatible(workflow, record)
        return cls(workflow, record)

    def _load_state(self, record: RunRecord) -> None:
        cp = self._store.checkpoint(record.run_id)
        self._state = cp.state
        self._frontier = Frontier.at(cp.node, cp.tasks)
        self._record = record
        self._chain = None  # the next checkpoint is a snapshot: no chain is assumed

    def _adopt(self, position: Position) -> None:
        """Take over where a driver left the run."""
        self._record = position.record
        self._state = position.state
        self._frontier = position.frontier
        self._chain = position.chain

    def _sync(self, record: RunRecord) -> None:
        """Adopt ``record``; reload the state only if something was written to the run
        since (another worker moved it, or a decision — perhaps with an edited state)."""
        if record.step != self._record.step or record.seq != self._record.seq:
            self._load_state(record)
        else:
            self._record = record

    @property
    def record(self) -> RunRecord:
        """The run's row as stored now."""
        self._sync(self._store.get_run(self.run_id))
        return self._record

    def _position(self) -> Position:
        from agentnb.graph.driver import Position

        return Position(self._record, self._state, self._frontier, self._chain)


def _check_compatible(workflow: Workflow, record: RunRecord) -> None:
    if record.node != END and record.node not in workflow.nodes:
        raise IncompatibleWorkflow(
            record.run_id, f"its next node {record.node!r} is not in workflow {workflow.name!r}"
        )
    if record.graph != workflow.name:
        raise IncompatibleWorkflow(
            record.run_id, f"it belongs to workflow {record.graph!r}, not {workflow.name!r}"
        )
    if record.shape != workflow.shape:
        raise IncompatibleWorkflow(
            record.run_id,
            "the workflow's nodes, edges or interrupts changed since the run started "
            f"(shape {record.shape} then, {workflow.shape} now)",
        )
