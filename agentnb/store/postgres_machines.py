"""State-machine instances in the PostgreSQL checkpointer: ``PostgresCheckpointer(dsn).machines``.

The SQLite machine store's code (:mod:`agentnb.store.machines`) on the checkpointer's
session: its transactions take the database-wide advisory lock, and each call runs again
after a lost connection (a commit in doubt is asked about, never repeated). A write to an
instance a panel watches is announced (:mod:`agentnb.store.postgres_listener`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agentnb.store.machines import SqliteMachineStore
from agentnb.store.postgres_listener import machine_topic
from agentnb.store.postgres_locks import reconnecting

if TYPE_CHECKING:
    from agentnb.store.postgres import PostgresCheckpointer
    from agentnb.store.watch import Watch

_F = TypeVar("_F", bound=Callable[..., Any])


def _announced(method: _F) -> _F:
    """Announce the writes of ``method`` (its first argument a snapshot) to the instance's
    watchers."""

    @functools.wraps(method)
    def announcing(self: PostgresMachineStore, snapshot: Any, *args: Any, **kwargs: Any) -> Any:
        local = self._owner._local
        local.topic = machine_topic(snapshot.instance_id)
        try:
            return method(self, snapshot, *args, **kwargs)
        finally:
            local.topic = None

    return cast(_F, announcing)


__all__ = ["PostgresMachineStore"]


class PostgresMachineStore(SqliteMachineStore):
    """Machine instances in the PostgreSQL database: the SQLite store's code, on the
    checkpointer's session, again after a lost connection."""

    def __init__(self, owner: PostgresCheckpointer) -> None:
        super().__init__(owner.dsn, owner._write, owner._read)
        self._owner = owner
        self._reconnect = owner._reconnect
        self._using = owner._using

    def __repr__(self) -> str:
        return f"<PostgresMachineStore in {self.path!r}>"

    create = reconnecting(_announced(SqliteMachineStore.create))
    load = reconnecting(SqliteMachineStore.load)
    commit = reconnecting(_announced(SqliteMachineStore.commit))
    find_event = reconnecting(SqliteMachineStore.find_event)
    history = reconnecting(SqliteMachineStore.history)
    instances = reconnecting(SqliteMachineStore.instances)
    timers = reconnecting(SqliteMachineStore.timers)

    def watch(self, instance_id: str, wake: Callable[[], None]) -> Watch:
        """Call ``wake()`` after every commit, by any process, to the instance
        (:mod:`agentnb.store.watch`); what a :class:`~agentnb.widgets.MachineView` follows."""
        return self._owner.listener.watch(machine_topic(instance_id), wake)
