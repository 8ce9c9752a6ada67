"""What building a step's records costs, beside the same records frozen.

The records a step builds (``agentnb.store.records``' docstring) are
``@dataclass(slots=True)`` without ``frozen``. This prints, for each, ns per build by
position of the class as it is, of a frozen slotted dataclass with the same fields, and
of a ``NamedTuple`` with them, measured in turns in this run (the best of 7 rounds), and
what the frozen ones would add to a linear step (two events, the commit, the checkpoint
write, the chain; the memory store's run record besides).

Run with ``python bench/bench_records.py``.
"""

from __future__ import annotations

import dataclasses
import sys
import timeit
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb.store.chains import Chain
from agentnb.store.records import Event, RunRecord
from agentnb.store.writes import CheckpointWrite, StepCommit

PER_STEP = {Event: 2, StepCommit: 1, CheckpointWrite: 1, Chain: 1, RunRecord: 1}
NUMBER, ROUNDS = 100_000, 7


def frozen(cls: type) -> type:
    """A frozen slotted dataclass with ``cls``'s fields."""
    return dataclasses.make_dataclass(
        f"Frozen{cls.__name__}",
        [(f.name, f.type) for f in dataclasses.fields(cls)],
        frozen=True,
        slots=True,
    )


def named_tuple(cls: type) -> type:
    """A ``NamedTuple`` with ``cls``'s fields."""
    made: type = NamedTuple(  # type: ignore[misc]
        f"Tuple{cls.__name__}", [(f.name, Any) for f in dataclasses.fields(cls)]
    )
    return made


def ns_per_build(kinds: dict[str, type], args: tuple[Any, ...]) -> dict[str, float]:
    """The best of ``ROUNDS`` rounds of each kind, the kinds taking turns in each round."""
    best = dict.fromkeys(kinds, float("inf"))
    for _ in range(ROUNDS):
        for name, cls in kinds.items():
            seconds = timeit.timeit(lambda cls=cls: cls(*args), number=NUMBER)
            best[name] = min(best[name], seconds / NUMBER * 1e9)
    return best


def main() -> None:
    print(f"ns per record built by position, best of {ROUNDS} rounds of {NUMBER:,}")
    print(f"{'record':<16}{'as it is':>10}{'frozen':>10}{'NamedTuple':>12}{'frozen/it':>11}")
    extra = 0.0
    for cls, count in PER_STEP.items():
        args = tuple(f"value {i}" for i in range(len(dataclasses.fields(cls))))
        ns = ns_per_build({"it": cls, "frozen": frozen(cls), "tuple": named_tuple(cls)}, args)
        extra += count * (ns["frozen"] - ns["it"])
        print(
            f"{cls.__name__:<16}{ns['it']:>10.0f}{ns['frozen']:>10.0f}{ns['tuple']:>12.0f}"
            f"{ns['frozen'] / ns['it']:>10.1f}x"
        )
    print(f"frozen records would add {extra / 1000:.1f} µs to a linear step in memory")


if __name__ == "__main__":
    main()
