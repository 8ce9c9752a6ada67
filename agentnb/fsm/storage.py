"""The contract between machine instances and where they are kept: :class:`MachineStore`.

It sits with the definitions (below the running side), so a checkpointer can name it as the
type of its ``machines`` without importing instances. Implementations:
:class:`~agentnb.fsm.memory.MemoryMachineStore` and
:class:`~agentnb.store.machines.SqliteMachineStore`.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentnb._json import check, dumps, loads
from agentnb.fsm.records import InstanceSnapshot, TimerChange, TimerRecord, TransitionRecord

__all__ = ["MachineStore", "incoming"]


class MachineStore(Protocol):
    """Where instances live: state, context, the record of every processed event, timers.

    Every method is short and synchronous; :meth:`commit` is the only write after
    :meth:`create`, and it is atomic.

    Example:
        Every machine store (in memory, or a checkpointer's) offers the same calls:

        >>> from agentnb import MemoryCheckpointer
        >>> from agentnb.fsm import MachineStore, MemoryMachineStore, StateMachine
        >>> def where(store: MachineStore, instance_id: str) -> str:
        ...     return store.load(instance_id).state
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> checkpointer = MemoryCheckpointer()  # its machines live beside its runs
        >>> for store in (MemoryMachineStore(), checkpointer.machines):
        ...     _ = door.start("front", store=store).send("push")
        ...     print(where(store, "front"))
        open
        open
    """

    def create(self, snapshot: InstanceSnapshot, timers: TimerChange | None = None) -> None:
        """Save a new instance (and the timers it started with); raise StoreError if taken."""

    def load(self, instance_id: str) -> InstanceSnapshot | None:
        """The instance's current snapshot (a fresh copy), or ``None`` if unknown."""

    def commit(
        self,
        snapshot: InstanceSnapshot,
        record: TransitionRecord,
        timers: TimerChange | None = None,
    ) -> TransitionRecord:
        """Save the new snapshot, its record and its timer changes in one transaction.

        If ``record.event_id`` was already recorded for the instance, change nothing and
        return the earlier record. Otherwise the stored ``seq`` must be ``record.seq - 1``
        (another writer got there first if not: raise :class:`~agentnb.InstanceConflict`, save
        nothing). Timers named in ``timers.cancel`` (by send id) are removed before
        ``timers.add`` are inserted; ``timers.fired`` is removed.
        """

    def find_event(self, instance_id: str, event_id: str) -> TransitionRecord | None:
        """The record of a processed event id, or ``None``."""

    def history(self, instance_id: str) -> list[TransitionRecord]:
        """Every record of the instance, by ``seq``."""

    def timers(self, instance_id: str) -> list[TimerRecord]:
        """The instance's pending timers, by fire time then scheduling order."""


def incoming(
    store: MachineStore, instance_id: str, payload: Any, event_id: str | None
) -> tuple[Any, TransitionRecord | None]:
    """An event's payload as it will be stored (checked, a detached copy), and the record
    of the event already committed under ``event_id`` (a repeated send), if any.

    Raises:
        InvalidState: the payload is not JSON.
    """
    if payload is not None:  # None is JSON and immutable: nothing to check or copy
        check(payload, root="payload")
        payload = loads(dumps(payload))
    done = None if event_id is None else store.find_event(instance_id, event_id)
    return payload, done
