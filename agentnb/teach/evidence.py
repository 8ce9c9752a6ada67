"""What a checker may look at: the records a run or an instance left in a store.

Checkers see only what was *recorded* — runs, events, checkpoints, decisions, effects and
state-machine histories — never the student's code, so any solution that does the right
thing passes, and a ``.sqlite3`` file on its own is a complete submission.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agentnb.store.records import Checkpoint, Decision, Effect, Event, RunRecord

if TYPE_CHECKING:
    from agentnb.fsm.instance import MachineInstance, MachineStore
    from agentnb.fsm.machine import StateMachine
    from agentnb.fsm.records import InstanceSnapshot, TransitionRecord
    from agentnb.store.base import Checkpointer

__all__ = ["Evidence"]


class Evidence:
    """Read-only views of one store, narrowed to the run or instance being graded.

    Attributes:
        answer: what the student predicted (``check(..., answer=...)``), or ``None``.
        instance: the machine instance passed to ``check``, if any (its definition tells
            which states are final, which a store alone cannot).

    Example:
        A checker reads a run only through its ``Evidence``:

        >>> from agentnb import StateGraph
        >>> from agentnb.teach import Evidence
        >>> graph = StateGraph("g").add_node("a", lambda state: {"x": 1}).set_entry_point("a")
        >>> workflow = graph.compile()
        >>> run = workflow.invoke({})
        >>> evidence = Evidence(workflow.checkpointer, run_ids=[run.run_id])
        >>> [record.graph for record in evidence.runs()], evidence.nodes_started(run.run_id)
        (['g'], ['a'])
        >>> evidence.state(run.run_id)
        {'x': 1}
    """

    def __init__(
        self,
        checkpointer: Checkpointer | None,
        *,
        machines: MachineStore | None = None,
        run_ids: Iterable[str] | None = None,
        instance: MachineInstance | None = None,
        answer: Any = None,
    ) -> None:
        self.checkpointer = checkpointer
        self.machines = machines
        self.run_ids = None if run_ids is None else tuple(run_ids)
        self.instance = instance
        self.answer = answer

    # -- workflow runs -----------------------------------------------------------------

    def runs(self, graph: str | None = None) -> list[RunRecord]:
        """The runs being graded, oldest first (only those of ``graph`` when given)."""
        if self.checkpointer is None:
            return []
        if self.run_ids is not None:
            found = [self.checkpointer.get_run(r) for r in self.run_ids]
        else:
            found = sorted(self.checkpointer.list_runs(), key=lambda r: (r.created_at, r.run_id))
        return [r for r in found if graph is None or r.graph == graph]

    def events(self, run_id: str) -> list[Event]:
        return self._store.events(run_id)

    def nodes_started(self, run_id: str) -> list[str]:
        """The nodes that started, in order (a retried node counts once per start)."""
        return [e.node for e in self.events(run_id) if e.type == "node_start" and e.node]

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        return self._store.checkpoints(run_id)

    def state(self, run_id: str) -> dict[str, Any]:
        """The run's latest state."""
        return self._store.checkpoint(run_id).state

    def first_state(self, run_id: str) -> dict[str, Any]:
        """The state the run started with."""
        return self.checkpoints(run_id)[0].state

    def decisions(self, run_id: str | None = None) -> list[Decision]:
        """The approval audit — accepted decisions and refused attempts — oldest first."""
        if self.checkpointer is None:
            return []
        if run_id is not None:
            return self.checkpointer.decisions(run_id)
        ids = {r.run_id for r in self.runs()}
        return [d for d in self.checkpointer.decisions() if d.run_id in ids]

    def effects(self, run_id: str) -> list[Effect]:
        return self._store.effects(run_id)

    def failure(self, run_id: str) -> dict[str, Any] | None:
        """The ``error`` of the run's ``failed`` event (``{"type", "message"}``), if any."""
        for event in reversed(self.events(run_id)):
            if event.type == "failed":
                error = event.payload.get("error")
                return error if isinstance(error, dict) else None
        return None

    @property
    def _store(self) -> Checkpointer:
        if self.checkpointer is None:  # pragma: no cover - checkers ask runs() first
            raise LookupError("no workflow checkpointer was given")
        return self.checkpointer

    # -- state machines ----------------------------------------------------------------

    def instances(self) -> list[InstanceSnapshot]:
        """The machine instances being graded (all of the store's, or the one passed)."""
        if self.instance is not None:
            return [self.instance.store.load(self.instance.id)]  # type: ignore[list-item]
        listing = getattr(self.machines, "instances", None)
        return list(reversed(listing())) if listing is not None else []

    def history(self, instance_id: str) -> list[TransitionRecord]:
        """Every processed event of the instance, in order."""
        if self.instance is not None and instance_id == self.instance.id:
            return self.instance.history
        if self.machines is None:
            return []
        return self.machines.history(instance_id)

    @property
    def machine(self) -> StateMachine | None:
        """The definition of the instance passed to ``check``, if one was."""
        if self.instance is None:
            return None
        from agentnb.fsm.machine import StateMachine

        machine = self.instance.machine
        return machine if isinstance(machine, StateMachine) else None
