"""The store's records (plain slotted dataclasses: the unfrozen ones are values all the
same, see tests/values.py) and ``records.packed_event`` (an event row as the SQL stores
pack it, from encoded parts)."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import SqliteCheckpointer, StateGraph
from agentnb._json import dumps, quote
from agentnb.store.chains import Chain
from agentnb.store.records import (
    NS,
    Checkpoint,
    Decision,
    Effect,
    Event,
    EventType,
    PendingTask,
    PendingWrite,
    RunRecord,
    Status,
    packed_event,
)
from agentnb.store.sql_rows import pack, unpack
from agentnb.store.writes import DecisionEdit
from tests.values import UNFROZEN, Reassigned

FROZEN = [Checkpoint, PendingWrite, PendingTask, Decision, Effect, DecisionEdit]
RECORDS = [*UNFROZEN, *FROZEN]


def built(cls: type[Any]) -> Any:
    """A record of ``cls`` with a distinct value in every field."""
    return cls(*[f"value {i}" for i in range(len(dataclasses.fields(cls)))])


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
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
    if required:
        with pytest.raises(TypeError):
            cls()  # its required arguments


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_a_record_is_slotted_and_copies_and_pickles_to_an_equal_one(cls: type[Any]) -> None:
    made = built(cls)
    assert not hasattr(made, "__dict__")
    for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert type(again) is cls
        assert again == made
    assert dataclasses.replace(made) == made


@pytest.mark.parametrize("cls", FROZEN, ids=lambda c: c.__name__)
def test_a_frozen_record_refuses_assignment(cls: type[Any]) -> None:
    made = built(cls)
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(made, name, "changed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(made, name)


@pytest.mark.parametrize("cls", UNFROZEN, ids=lambda c: c.__name__)
def test_the_suite_refuses_reassigning_a_field_of_an_unfrozen_record(cls: type[Any]) -> None:
    made = built(cls)
    name = dataclasses.fields(cls)[0].name
    with pytest.raises(Reassigned, match=f"{cls.__name__}.{name} assigned"):
        setattr(made, name, "changed")
    with pytest.raises(Reassigned, match=f"{cls.__name__}.{name} deleted"):
        delattr(made, name)
    assert getattr(made, name) == "value 0"
    moved = dataclasses.replace(made, **{name: "changed"})  # the way to change one
    assert (getattr(moved, name), getattr(made, name)) == ("changed", "value 0")


def test_records_compare_by_their_fields_and_show_them() -> None:
    event = Event("r", 1, 0, "x", None, {"a": 1}, 1.5)
    assert event == Event("r", 1, 0, "x", None, {"a": 1}, 1.5)
    assert event != Event("r", 2, 0, "x", None, {"a": 1}, 1.5)
    assert repr(event).startswith("Event(run_id='r', seq=1,")
    run = RunRecord("r", "g", "s", Status.RUNNING, "n", 0, 1, 10, 0.0, 0.0)
    assert (run.fence, run.lease_owner) == (0, None)
    assert Chain(1, 2, since=({"a": 1}, None)) == Chain(1, 2)  # ``since`` is not compared


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@pytest.mark.slow
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
