"""Property: a stored approver policy allows exactly the identities it names (by name or
by group), minus the starter under separate duties — on both backends, whatever the names."""

from __future__ import annotations

from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import Identity, MemoryCheckpointer, NotAuthorized, SqliteCheckpointer, StateGraph
from agentnb.store.base import Checkpointer

names = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=":"), min_size=1, max_size=8
).filter(lambda s: s.strip() != "")
groups = st.frozensets(names, max_size=3)
entries = st.frozensets(st.one_of(names, names.map(lambda g: f"group:{g}")), min_size=1, max_size=4)


def expected(entries: frozenset[str], who: Identity, starter: Identity, separate: bool) -> bool:
    if separate and who.name == starter.name:
        return False
    return who.name in entries or any(f"group:{g}" in entries for g in who.groups)


def decide_once(
    store: Checkpointer, allowed: frozenset[str], separate: bool, starter: Identity, who: Identity
) -> bool:
    graph = StateGraph("p").add_node("pay", lambda s: None).set_entry_point("pay")
    graph.add_interrupt_before("pay", approvers=allowed, separate_duties=separate)
    run = graph.compile(store, identity=lambda: starter).start({})
    run.run()
    try:
        store.decide(run.run_id, "approved", "typed name", identity=who)
    except NotAuthorized:
        assert store.get_run(run.run_id).status == "pending"
        return False
    return True


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(
    entries,
    st.booleans(),
    st.tuples(names, groups),
    st.tuples(names, groups),
)
def test_a_stored_policy_allows_exactly_whom_it_names(
    allowed: frozenset[str],
    separate: bool,
    starter_spec: tuple[str, frozenset[str]],
    who_spec: tuple[str, frozenset[str]],
) -> None:
    starter, who = Identity(*starter_spec), Identity(*who_spec)
    want = expected(allowed, who, starter, separate)
    assert decide_once(MemoryCheckpointer(), allowed, separate, starter, who) is want
    with TemporaryDirectory() as tmp, SqliteCheckpointer(Path(tmp) / "p.sqlite3") as store:
        assert decide_once(store, allowed, separate, starter, who) is want
