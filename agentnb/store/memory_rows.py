"""The memory checkpointer's stored checkpoints: rows of :mod:`agentnb.store.chains`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from agentnb.store import chains

__all__ = ["Row", "state"]


class Row(NamedTuple):
    """One stored checkpoint: a row of :mod:`agentnb.store.chains`."""

    node: str
    kind: str
    body: str
    at: float
    tasks: str | None


def state(saved: Mapping[int, Row], step: int) -> dict[str, Any]:
    """The state at ``step``: its row and the rows before it, back to a snapshot."""

    def newest_first() -> Iterator[tuple[int, str | None, str]]:
        for at in range(step, min(saved) - 1, -1):
            found = saved.get(at)
            if found is None:
                return
            yield at, found.kind, found.body

    return chains.rebuild(newest_first())
