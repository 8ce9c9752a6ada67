"""``records.record``: a frozen dataclass whose ``__init__`` fills the slots directly."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from agentnb.store.base import CheckpointWrite, StepCommit
from agentnb.store.records import Event, RunRecord, Status, record

FAST = [Event, RunRecord, CheckpointWrite, StepCommit]


def stock(cls: type[Any]) -> type[Any]:
    """The same fields as a plain frozen dataclass: what ``record`` must behave like."""
    return dataclasses.make_dataclass(
        f"Stock{cls.__name__}",
        [
            (f.name, f.type, dataclasses.field(default=f.default))
            if f.default is not dataclasses.MISSING
            else (f.name, f.type)
            for f in dataclasses.fields(cls)
        ],
        frozen=True,
        slots=True,
    )


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_a_record_takes_the_arguments_a_frozen_dataclass_takes(cls: type[Any]) -> None:
    ours = inspect.signature(cls)
    theirs = inspect.signature(stock(cls))
    assert [(p.name, p.default, p.kind) for p in ours.parameters.values()] == [
        (p.name, p.default, p.kind) for p in theirs.parameters.values()
    ]


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_every_field_a_record_is_given_is_set(cls: type[Any]) -> None:
    fields = dataclasses.fields(cls)
    values = [f"value {i}" for i in range(len(fields))]
    by_position = cls(*values)
    by_name = cls(**{f.name: v for f, v in zip(fields, values, strict=True)})
    assert [getattr(by_position, f.name) for f in fields] == values
    assert by_name == by_position
    required = [f for f in fields if f.default is dataclasses.MISSING]
    defaults = cls(*values[: len(required)])
    assert [getattr(defaults, f.name) for f in fields[len(required) :]] == [
        f.default for f in fields[len(required) :]
    ]


def test_a_record_stays_frozen_and_replaceable() -> None:
    event = Event("r", 1, 0, "x", None, {"a": 1}, 1.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.seq = 2  # type: ignore[misc]
    moved = dataclasses.replace(event, seq=2)
    assert (moved.seq, moved.payload, event.seq) == (2, {"a": 1}, 1)
    assert event == Event("r", 1, 0, "x", None, {"a": 1}, 1.5)
    assert repr(event).startswith("Event(run_id='r', seq=1,")
    assert not hasattr(event, "__dict__")  # slots, as before
    run = RunRecord("r", "g", "s", Status.RUNNING, "n", 0, 1, 10, 0.0, 0.0)
    assert (run.fence, run.lease_owner) == (0, None)


def test_a_record_with_a_factory_keeps_the_stock_init() -> None:
    @record
    class Listed:
        items: list[int] = dataclasses.field(default_factory=list)

    first, second = Listed(), Listed()
    assert first.items == []
    assert first.items is not second.items
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.items = [1]  # type: ignore[misc]
