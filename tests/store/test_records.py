"""``records.record`` (a frozen dataclass whose ``__new__`` fills the slots as plain stores) and
``records.packed_event`` (an event row as the SQL stores pack it, from encoded parts)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import SqliteCheckpointer, StateGraph
from agentnb._json import dumps, quote
from agentnb.store.base import CheckpointWrite, StepCommit
from agentnb.store.chains import Chain
from agentnb.store.records import (
    NS,
    Event,
    EventType,
    RunRecord,
    Status,
    maker,
    packed_event,
    record,
)
from agentnb.store.sql_rows import pack, unpack

FAST = [Event, RunRecord, CheckpointWrite, StepCommit, Chain]


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


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_a_record_is_of_its_own_class_and_copies_and_pickles_as_a_dataclass(
    cls: type[Any],
) -> None:
    import copy
    import pickle

    fields = dataclasses.fields(cls)
    made = cls(*[f"value {i}" for i in range(len(fields))])
    assert type(made) is cls
    for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert type(again) is cls
        assert again == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        object.__getattribute__(made, "__setattr__")(fields[0].name, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(made, fields[0].name)


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_a_records_maker_builds_the_record_its_class_builds(cls: type[Any]) -> None:
    make = maker(cls)
    assert make is not cls
    fields = dataclasses.fields(cls)
    values = [f"value {i}" for i in range(len(fields))]
    required = len([f for f in fields if f.default is dataclasses.MISSING])
    for args in (values, values[:required]):
        made = make(*args)
        assert type(made) is cls
        assert made == cls(*args)
        assert [getattr(made, f.name) for f in fields] == [
            getattr(cls(*args), f.name) for f in fields
        ]
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, fields[0].name, "changed")
        assert pickle.loads(pickle.dumps(made)) == made
    assert make(**{f.name: v for f, v in zip(fields, values, strict=True)}) == cls(*values)
    if required:
        with pytest.raises(TypeError):
            make()  # its required arguments, as the class's


def test_the_maker_of_a_records_subclass_is_the_subclass() -> None:
    class Special(Event):
        __slots__ = ()

    assert maker(Special) is Special


def test_a_subclass_of_a_record_is_built_the_stock_way() -> None:
    class Special(Event):
        __slots__ = ("extra",)

        def __init__(self, *args: Any) -> None:
            object.__setattr__(self, "extra", len(args))

    special = Special("r", 1, 0, "x", None, {}, 1.5)
    assert type(special) is Special
    assert (special.seq, special.at, special.extra) == (1, 1.5, 7)
    assert special == Special("r", 1, 0, "x", None, {}, 1.5)


def test_a_record_with_a_factory_keeps_the_stock_init() -> None:
    @record
    class Listed:
        items: list[int] = dataclasses.field(default_factory=list)

    first, second = Listed(), Listed()
    assert first.items == []
    assert first.items is not second.items
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.items = [1]  # type: ignore[misc]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(0, 2**40),
    step=st.integers(0, 2**40),
    kind=st.sampled_from([*EventType, "custom kind"]),
    node=st.none() | st.text(),
    payload=st.dictionaries(st.text(), json_values, max_size=4),
    at_ns=st.integers(0, 4 * 10**18),
)
def test_a_packed_event_decodes_to_the_event_pack_writes(
    seq: int, step: int, kind: str, node: str | None, payload: dict[str, Any], at_ns: int
) -> None:
    event = Event("r", seq, step, kind, node, payload, at_ns / NS)
    row = packed_event(seq, step, quote(kind), dumps(node), dumps(payload), at_ns)
    assert unpack("r", f"[{row}]") == unpack("r", pack([event])) == [event]
    assert type(unpack("r", f"[{row}]")[0].at) is float


def test_a_linear_steps_events_come_back_from_sqlite_as_they_were_made(tmp_path: Any) -> None:
    odd = 'n"é\\\n1'  # a node name JSON must escape
    g = StateGraph("odd")
    g.add_node(odd, lambda s: {"n": 1, "text": 'a "quoted" é'})
    g.add_node("b", lambda s: {"n": 2.5, "items": [1, {"x": None}]})
    g.add_node("c", lambda s: None)
    g.set_entry_point(odd)
    g.add_edge(odd, "b")
    g.add_edge("b", "c")
    with SqliteCheckpointer(tmp_path / "runs.sqlite3") as store:
        run = g.compile(store).start({"n": 0})
        made = list(run.stream())
        stored = store.events(run.run_id)
    assert [e.type for e in made] == ["node_start", "state_update"] * 3 + ["completed"]
    assert stored[0].type == "run_started"
    assert stored[1:] == made  # every field, ``at`` to the last bit
    assert stored[1].node == odd
    assert stored[2].payload == {"delta": {"n": 1, "text": 'a "quoted" é'}, "next": "b"}
    assert stored[4].payload == {"delta": {"n": 2.5, "items": [1, {"x": None}]}, "next": "c"}
