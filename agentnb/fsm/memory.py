"""``MemoryMachineStore``: the instance store contract in a dict, for tests and teaching.

It keeps the rules a database would: ``commit`` saves a snapshot and its record together,
answers a known event id with the earlier record, and refuses a write based on a stale
``seq``. Contexts and payloads are kept as JSON text, so what comes back is a fresh copy.
"""

from __future__ import annotations

import threading

from agentnb._json import dumps, loads
from agentnb.errors import InstanceConflict, InstanceNotFound, StoreError
from agentnb.fsm.records import InstanceSnapshot, TimerChange, TimerRecord, TransitionRecord

__all__ = ["MemoryMachineStore"]


class MemoryMachineStore:
    """A :class:`~agentnb.fsm.instance.MachineStore` in this process's memory.

    Contexts and payloads are kept as JSON text, so what comes back is a fresh copy, as
    from a database.

    Example:
        An instance is resumed from its store, here one in memory:

        >>> from agentnb.fsm import MemoryMachineStore, StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed")
        >>> _ = door.add_transition("closed", "push", "open")
        >>> _ = door.add_transition("open", "pull", "closed")
        >>> store = MemoryMachineStore()
        >>> _ = door.start("front", store=store).send("push")
        >>> door.resume("front", store=store).state
        'open'
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshots: dict[str, tuple[str, str, str, int, str]] = {}
        self._timers: dict[str, dict[str, tuple[TimerRecord, str]]] = {}
        self._records: dict[str, list[tuple[TransitionRecord, str, str]]] = {}
        self._event_seq: dict[str, dict[str, int]] = {}

    def __repr__(self) -> str:
        return f"<MemoryMachineStore: {len(self._snapshots)} instances>"

    def create(self, snapshot: InstanceSnapshot, timers: TimerChange | None = None) -> None:
        context = dumps(snapshot.context, root="context")
        chart = dumps(snapshot.chart, root="chart")
        with self._lock:
            if snapshot.instance_id in self._snapshots:
                raise StoreError(
                    f"instance {snapshot.instance_id!r} already exists in this store. Attach "
                    f"to it with machine.resume({snapshot.instance_id!r}, store=...), or "
                    "start with another id"
                )
            self._snapshots[snapshot.instance_id] = (
                snapshot.machine,
                snapshot.state,
                context,
                snapshot.seq,
                chart,
            )
            self._records[snapshot.instance_id] = []
            self._event_seq[snapshot.instance_id] = {}
            self._timers[snapshot.instance_id] = {}
            self._apply(snapshot.instance_id, timers)

    def load(self, instance_id: str) -> InstanceSnapshot | None:
        with self._lock:
            row = self._snapshots.get(instance_id)
        if row is None:
            return None
        return InstanceSnapshot.from_row(instance_id, row)

    def commit(
        self,
        snapshot: InstanceSnapshot,
        record: TransitionRecord,
        timers: TimerChange | None = None,
    ) -> TransitionRecord:
        iid = snapshot.instance_id
        row = (record, dumps(record.payload, root="payload"), dumps(record.delta, root="delta"))
        context = dumps(snapshot.context, root="context")
        chart = dumps(snapshot.chart, root="chart")
        if timers is not None:
            for t in timers.add:
                dumps(t.data, root="timer")
        with self._lock:
            if iid not in self._snapshots:
                raise InstanceNotFound(iid)
            done = self._event_seq[iid].get(record.event_id)
            if done is not None:
                return self._record(iid, done)
            stored_seq = self._snapshots[iid][3]
            if stored_seq != record.seq - 1 or snapshot.seq != record.seq:
                raise InstanceConflict(iid, record.event, record.seq - 1, stored_seq)
            self._snapshots[iid] = (snapshot.machine, snapshot.state, context, snapshot.seq, chart)
            self._records[iid].append(row)
            self._event_seq[iid][record.event_id] = record.seq
            self._apply(iid, timers)
            return self._record(iid, record.seq)

    def timers(self, instance_id: str) -> list[TimerRecord]:
        with self._lock:
            rows = list(self._timers.get(instance_id, {}).values())
        found = [
            TimerRecord(t.instance_id, t.key, t.event, loads(data), t.fire_at, t.sendid)
            for t, data in rows
        ]
        return sorted(found, key=lambda t: (t.fire_at, t.key))

    def due(self, now: float) -> list[tuple[str, str, float]]:
        """``(instance id, machine, earliest fire_at)`` of every instance with a timer due
        at ``now``, earliest first (what a worker claims)."""
        with self._lock:
            found = [
                (iid, self._snapshots[iid][0], min(t.fire_at for t, _ in pending.values()))
                for iid, pending in self._timers.items()
                if pending and min(t.fire_at for t, _ in pending.values()) <= now
            ]
        return sorted(found, key=lambda d: (d[2], d[0]))

    def _apply(self, instance_id: str, timers: TimerChange | None) -> None:
        if timers is None:
            return
        pending = self._timers[instance_id]
        if timers.fired is not None:
            pending.pop(timers.fired, None)
        for sendid in timers.cancel:
            for key in [k for k, (t, _) in pending.items() if t.sendid == sendid]:
                del pending[key]
        for t in timers.add:
            pending[t.key] = (t, dumps(t.data, root="timer"))

    def find_event(self, instance_id: str, event_id: str) -> TransitionRecord | None:
        with self._lock:
            seq = self._event_seq.get(instance_id, {}).get(event_id)
            return None if seq is None else self._record(instance_id, seq)

    def history(self, instance_id: str) -> list[TransitionRecord]:
        with self._lock:
            return [self._record(instance_id, seq) for seq in range(1, self._count(instance_id))]

    def _count(self, instance_id: str) -> int:
        return len(self._records.get(instance_id, ())) + 1

    def _record(self, instance_id: str, seq: int) -> TransitionRecord:
        record, payload, delta = self._records[instance_id][seq - 1]
        # Fresh copies, so a caller mutating a payload cannot rewrite history.
        return TransitionRecord(
            record.instance_id,
            record.seq,
            record.event,
            record.event_id,
            record.source,
            record.target,
            loads(payload),
            loads(delta),
            record.at,
            record.ignored,
            record.reason,
            record.transition,
        )
