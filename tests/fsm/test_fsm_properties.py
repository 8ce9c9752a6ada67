"""Property tests: random tables driven by random event sequences.

The model is the pure decision itself: before each event the test asks ``adecide`` what
should happen, then checks the instance did exactly that — and nothing at all otherwise.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fsm_support import Sender
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentnb.errors import TransitionNotAllowed
from agentnb.fsm import StateMachine, TransitionRecord

EVENTS = ["a", "b", "next"]


def _even(context: dict[str, Any], payload: Any) -> bool:
    return context["n"] % 2 == 0


async def _odd(context: dict[str, Any], payload: Any) -> bool:
    await asyncio.sleep(0)
    return context["n"] % 2 == 1


def _bump(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"n": context["n"] + 1}


async def _double(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"n": context["n"] * 2, "last": payload}


GUARDS = {None: None, "even": _even, "odd": _odd}
ACTIONS = {None: None, "bump": _bump, "double": _double}


@st.composite
def tables(draw: st.DrawFn) -> StateMachine:
    """A valid machine: a chain keeps every state reachable and never stuck."""
    n = draw(st.integers(min_value=2, max_value=6))
    states = [f"s{i}" for i in range(n)]
    has_final = draw(st.booleans())
    movable = states[:-1] if has_final else states
    edges = [(states[i], "next", states[i + 1], None, None) for i in range(n - 1)]
    if not has_final:
        edges.append((states[-1], "next", states[0], None, None))
    extra = st.tuples(
        st.sampled_from(movable),
        st.sampled_from(EVENTS),
        st.sampled_from(states),
        st.sampled_from(list(GUARDS)),
        st.sampled_from(list(ACTIONS)),
    )
    edges += draw(st.lists(extra, max_size=10))
    # Guarded transitions first, then at most one fallback per (state, event).
    by_key: dict[tuple[str, str], list[tuple[str, str, str, Any, Any]]] = {}
    for edge in edges:
        by_key.setdefault((edge[0], edge[1]), []).append(edge)
    machine = StateMachine("random", states, initial="s0", final=states[-1:] if has_final else [])
    for group in by_key.values():
        guarded = [e for e in group if e[3] is not None]
        fallback = [e for e in group if e[3] is None][:1]
        for source, event, target, guard, action in guarded + fallback:
            machine.add_transition(
                source, event, target, guard=GUARDS[guard], action=ACTIONS[action]
            )
    return machine


sends = st.lists(
    st.tuples(
        st.sampled_from([*EVENTS, "bogus"]),
        st.one_of(st.none(), st.sampled_from(["id-1", "id-2", "id-3"])),
        st.integers(min_value=0, max_value=3),
    ),
    max_size=25,
)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machine=tables(), events=sends, strict=st.booleans())
def test_instances_follow_the_pure_decision_and_nothing_else(
    mode: str, machine: StateMachine, events: list[tuple[str, str | None, int]], strict: bool
) -> None:
    send = Sender(mode)
    instance = machine.start(context={"n": 1}, strict=strict)
    done: dict[str, TransitionRecord] = {}
    for event, event_id, payload in events:
        state, context, history = instance.state, instance.context, instance.history
        if event_id is not None and event_id in done:
            assert send(instance, event, payload, event_id) == done[event_id]
            assert (instance.state, instance.context, instance.history) == (
                state,
                context,
                history,
            )
            continue
        expected = asyncio.run(machine.adecide(state, event, context, payload))
        if expected is None and strict:
            with pytest.raises(TransitionNotAllowed):
                send(instance, event, payload, event_id)
            assert (instance.state, instance.context, instance.history) == (
                state,
                context,
                history,
            )
            continue
        record = send(instance, event, payload, event_id)
        assert record.seq == len(history) + 1
        assert instance.history == [*history, record]
        if expected is None:
            assert record.ignored
            assert (instance.state, instance.context) == (state, context)
        else:
            assert not record.ignored
            assert (record.source, record.target) == (state, expected.target)
            assert instance.state == expected.target
        if event_id is not None:
            done[event_id] = record
        assert instance.state in machine.states
