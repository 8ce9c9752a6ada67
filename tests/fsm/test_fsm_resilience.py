"""Timeouts, retries and circuit breakers on state-machine actions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fsm_support import Sender

from agentnb.errors import BreakerOpen, DefinitionError, NodeTimeout
from agentnb.fsm import StateMachine
from agentnb.resilience import CircuitBreaker, Retry


def order_machine(action: Any, **guards: Any) -> StateMachine:
    m = StateMachine("order", ["new", "paid"], initial="new", final=["paid"])
    m.add_transition("new", "pay", "paid", action=action, **guards)
    return m


def test_a_slow_action_times_out_and_the_instance_stays_put(send: Sender) -> None:
    async def slow(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        await asyncio.sleep(30)
        return {"paid": True}

    order = order_machine(slow, timeout=0.05).start()
    with pytest.raises(NodeTimeout, match="action 'slow' of instance"):
        send(order, "pay")
    assert order.state == "new"
    assert order.history == []


def test_a_flaky_action_is_retried(send: Sender) -> None:
    calls: list[int] = []

    def charge(context: dict[str, Any], payload: Any) -> dict[str, Any]:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("gateway reset")
        return {"charged": len(calls)}

    order = order_machine(charge, retry=Retry(attempts=3, initial=0.001, jitter=0)).start()
    record = send(order, "pay")
    assert (record.target, order.context) == ("paid", {"charged": 3})


def test_an_open_breaker_refuses_the_action_fast(send: Sender) -> None:
    now = [0.0]
    breaker = CircuitBreaker("bank", failures=1, reset_after=10, clock=lambda: now[0])
    calls: list[int] = []

    def charge(context: dict[str, Any], payload: Any) -> None:
        calls.append(1)
        raise ConnectionError("bank down")

    machine = order_machine(charge, breaker=breaker)
    first = machine.start()
    with pytest.raises(ConnectionError):
        send(first, "pay")
    second = machine.start()
    with pytest.raises(BreakerOpen, match="action 'charge' was not called"):
        send(second, "pay")
    assert len(calls) == 1
    assert second.state == "new"


@pytest.mark.parametrize("guards", [{"timeout": 0}, {"retry": "x"}, {"breaker": object()}])
def test_bad_action_guards_are_definition_errors(guards: dict[str, Any]) -> None:
    with pytest.raises(DefinitionError):
        order_machine(lambda c, p: None, **guards)
