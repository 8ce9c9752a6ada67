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
    """The state at ``step``: its row and the rows before it, back to a snapshot (from a
    skip, straight to the anchor before it: the deltas between are not handed over)."""

    def newest_first() -> Iterator[tuple[int, str | None, str]]:
        at = step
        while (found := saved.get(at)) is not None:
            yield at, found.kind, found.body
            at -= 1
            if found.kind == chains.SKIP:
                while (row := saved.get(at)) is not None and row.kind == chains.DELTA:
                    at -= 1

    return chains.rebuild(newest_first())
