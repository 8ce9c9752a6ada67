"""State-machine instances in the PostgreSQL checkpointer: ``PostgresCheckpointer(dsn).machines``.

The SQLite machine store's code (:mod:`agentnb.store.machines`) on the checkpointer's
session: its transactions take the database-wide advisory lock, and each call runs again
after a lost connection (a commit in doubt is asked about, never repeated).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentnb.store.machines import SqliteMachineStore
from agentnb.store.postgres_locks import reconnecting

if TYPE_CHECKING:
    from agentnb.store.postgres import PostgresCheckpointer

__all__ = ["PostgresMachineStore"]


class PostgresMachineStore(SqliteMachineStore):
    """Machine instances in the PostgreSQL database: the SQLite store's code, on the
    checkpointer's session, again after a lost connection."""

    def __init__(self, owner: PostgresCheckpointer) -> None:
        super().__init__(owner.dsn, owner._write, owner._read)
        self._reconnect = owner._reconnect
        self._using = owner._using

    def __repr__(self) -> str:
        return f"<PostgresMachineStore in {self.path!r}>"

    create = reconnecting(SqliteMachineStore.create)
    load = reconnecting(SqliteMachineStore.load)
    commit = reconnecting(SqliteMachineStore.commit)
    find_event = reconnecting(SqliteMachineStore.find_event)
    history = reconnecting(SqliteMachineStore.history)
    instances = reconnecting(SqliteMachineStore.instances)
    timers = reconnecting(SqliteMachineStore.timers)
