"""Timeouts, retries, circuit breakers and once-only side effects."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from agentnb import Checkpointer, DefinitionError, NodeContext, NodeFailed, StateGraph, Status
from agentnb.errors import BreakerOpen, NodeTimeout
from agentnb.resilience import CircuitBreaker, Retry
from agentnb.testing import capture_events
from tests.conftest import Driver

FAST = {"initial": 0.001, "maximum": 0.002, "jitter": 0.0}


class Flaky:
    """Fails ``failures`` times with ``error``, then returns ``{"ok": True}``."""

    def __init__(self, failures: int, error: type[Exception] = ConnectionError) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self, state: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error(f"attempt {self.calls} failed")
        return {"ok": True}


def one_node(fn: Any, store: Checkpointer | None = None, **options: Any) -> Any:
    g = StateGraph("r").add_node("call", fn, **options).set_entry_point("call")
    return g.compile(store).start({})


def types(run: Any) -> list[str]:
    return [e.type for e in run.events]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- retries ---------------------------------------------------------------------------


def test_a_retried_node_succeeds_and_each_retry_is_an_event(
    store: Checkpointer, drive: Driver
) -> None:
    flaky = Flaky(2)
    run = one_node(flaky, store, retry=Retry(attempts=3, **FAST))
    drive.run(run)
    assert run.status == Status.COMPLETED
    assert flaky.calls == 3
    retries = [e for e in run.events if e.type == "retry"]
    assert [e.payload["attempt"] for e in retries] == [1, 2]
    assert retries[0].payload["error"] == {
        "type": "ConnectionError",
        "message": "attempt 1 failed",
    }
    assert all(0 <= e.payload["wait"] <= 0.002 for e in retries)


def test_exhausted_retries_fail_the_run_with_the_last_error(
    store: Checkpointer, drive: Driver
) -> None:
    flaky = Flaky(5)
    run = one_node(flaky, store, retry=3)
    with pytest.raises(NodeFailed, match="attempt 3 failed") as err:
        drive.run(run)
    assert isinstance(err.value.__cause__, ConnectionError)
    assert flaky.calls == 3
    assert types(run).count("retry") == 2
    assert run.status == Status.FAILED


def test_retry_and_failed_events_describe_the_error_in_one_shape(
    store: Checkpointer, drive: Driver
) -> None:
    run = one_node(Flaky(5), store, retry=Retry(attempts=2, **FAST))
    with pytest.raises(NodeFailed):
        drive.run(run)
    retry, failed = (e for e in run.events if e.type in ("retry", "failed"))
    assert retry.payload["error"] == {"type": "ConnectionError", "message": "attempt 1 failed"}
    assert failed.payload["error"] == {"type": "ConnectionError", "message": "attempt 2 failed"}
    assert failed.payload["raised"]["type"] == "NodeFailed"


def test_only_the_listed_exceptions_are_retried(store: Checkpointer) -> None:
    flaky = Flaky(1, error=ValueError)
    run = one_node(flaky, store, retry=Retry(attempts=3, on=(ConnectionError,), **FAST))
    with pytest.raises(NodeFailed, match="attempt 1 failed"):
        run.run()
    assert flaky.calls == 1
    assert "retry" not in types(run)


def test_backoff_grows_exponentially_up_to_the_maximum() -> None:
    flaky = Flaky(4)
    policy = Retry(attempts=5, initial=0.01, multiplier=2, maximum=0.03, jitter=0)
    run = one_node(flaky, retry=policy)
    run.run()
    waits = [e.payload["wait"] for e in run.events if e.type == "retry"]
    assert waits == [0.01, 0.02, 0.03, 0.03]


# -- timeouts --------------------------------------------------------------------------


def test_a_slow_async_node_times_out_and_fails_the_run(store: Checkpointer, drive: Driver) -> None:
    async def slow(state: dict[str, Any]) -> None:
        await asyncio.sleep(30)

    run = one_node(slow, store, timeout=0.05)
    started = time.monotonic()
    with pytest.raises(NodeFailed) as err:
        drive.run(run)
    assert time.monotonic() - started < 10
    assert isinstance(err.value.__cause__, NodeTimeout)
    assert types(run)[-2:] == ["timeout", "failed"]
    assert run.state == {}


def test_a_timeout_can_be_retried(store: Checkpointer) -> None:
    calls = []

    async def sometimes_slow(state: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(30)
        return {"done": len(calls)}

    run = one_node(
        sometimes_slow, store, timeout=0.05, retry=Retry(attempts=2, on=(NodeTimeout,), **FAST)
    )
    run.run()
    assert run.state == {"done": 2}
    assert types(run)[1:4] == ["node_start", "timeout", "retry"]


def test_a_blocking_sync_node_times_out_too() -> None:
    def blocking(state: dict[str, Any]) -> None:
        time.sleep(0.5)

    run = one_node(blocking, timeout=0.05)
    with pytest.raises(NodeFailed) as err:
        run.run()
    assert isinstance(err.value.__cause__, NodeTimeout)


# -- circuit breakers ------------------------------------------------------------------


def test_breaker_opens_after_failures_half_opens_after_cool_down_and_closes() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("payments", failures=2, reset_after=10, clock=clock)
    with capture_events(breaker) as captured:
        assert breaker.allow()
        breaker.failure()
        assert breaker.state == "closed"
        breaker.failure()
        assert breaker.state == "open"
        assert not breaker.allow()
        assert breaker.retry_in() == 10
        clock.now += 10
        assert breaker.allow()  # the one trial call
        assert breaker.state == "half_open"
        assert not breaker.allow()  # no second trial while the first is out
        breaker.failure()  # the trial failed: open again, for a fresh cool-down
        assert (breaker.state, breaker.retry_in()) == ("open", 10)
        clock.now += 10
        assert breaker.allow()
        breaker.success()
        assert (breaker.state, breaker.failure_count) == ("closed", 0)
    assert captured.breaker_changes == [
        ("payments", "closed", "open"),
        ("payments", "open", "half_open"),
        ("payments", "half_open", "open"),
        ("payments", "open", "half_open"),
        ("payments", "half_open", "closed"),
    ]


def test_an_open_breaker_fails_runs_fast_without_calling_the_node(store: Checkpointer) -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("payments", failures=2, reset_after=30, clock=clock)
    down = Flaky(100)
    g = StateGraph("b").add_node("call", down, breaker=breaker).set_entry_point("call")
    wf = g.compile(store)
    for _ in range(2):
        with pytest.raises(NodeFailed):
            wf.start({}).run()
    assert breaker.state == "open"
    run = wf.start({})
    with pytest.raises(BreakerOpen, match="'payments' is open") as err:
        run.run()
    assert err.value.run_id == run.run_id
    assert down.calls == 2
    assert types(run)[-2:] == ["breaker_open", "failed"]
    assert run.events[-2].payload == {"breaker": "payments", "retry_in": 30.0}
    assert run.status == Status.FAILED


def test_a_breaker_is_shared_by_the_nodes_that_call_one_dependency() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("db", failures=1, reset_after=5, clock=clock)
    g = StateGraph("shared")
    g.add_node("read", Flaky(1), breaker=breaker).add_node("write", Flaky(0), breaker=breaker)
    g.set_entry_point("read").add_edge("read", "write")
    wf = g.compile()
    with pytest.raises(NodeFailed):
        wf.start({}).run()
    run = wf.start({})
    with pytest.raises(BreakerOpen):
        run.run()  # 'read' is refused: the shared breaker opened on the first run
    clock.now += 5
    run = wf.start({})
    run.run()  # the trial call succeeds and closes the breaker for 'write' too
    assert run.status == Status.COMPLETED
    assert breaker.state == "closed"


def test_breaker_open_is_never_retried() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker("x", failures=1, reset_after=60, clock=clock)
    breaker.failure()
    flaky = Flaky(0)
    run = one_node(flaky, breaker=breaker, retry=Retry(attempts=5, **FAST))
    with pytest.raises(BreakerOpen):
        run.run()
    assert flaky.calls == 0
    assert "retry" not in types(run)


@pytest.mark.parametrize(
    "options",
    [
        {"retry": 0},
        {"retry": "3"},
        {"retry": True},
        {"timeout": 0},
        {"timeout": -1},
        {"timeout": "5"},
        {"breaker": "payments"},
    ],
)
def test_bad_resilience_options_are_definition_errors(options: dict[str, Any]) -> None:
    with pytest.raises(DefinitionError):
        StateGraph("x").add_node("a", lambda s: None, **options)


@pytest.mark.parametrize(
    "kwargs",
    [{"attempts": 0}, {"initial": -1}, {"multiplier": 0.5}, {"on": ()}, {"on": (int,)}],
)
def test_bad_retry_policies_are_definition_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(DefinitionError):
        Retry(**kwargs)


def test_bad_breaker_settings_are_definition_errors() -> None:
    with pytest.raises(DefinitionError):
        CircuitBreaker("x", failures=0)
    with pytest.raises(DefinitionError):
        CircuitBreaker("x", reset_after=-1)


# -- once-only side effects ------------------------------------------------------------


def test_once_runs_a_side_effect_once_across_retries(store: Checkpointer, drive: Driver) -> None:
    paid: list[str] = []
    attempts: list[int] = []

    def pay(key: str) -> dict[str, int]:
        paid.append(key)
        return {"id": len(paid)}

    def refund(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        receipt = ctx.once("pay", lambda: pay(ctx.idempotency_key))
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("the reply was lost after the payment went through")
        return {"receipt": receipt}

    run = one_node(refund, store, retry=Retry(attempts=2, **FAST))
    drive.run(run)
    assert run.state == {"receipt": {"id": 1}}
    assert len(attempts) == 2
    assert paid == [f"{run.run_id}:0:call"]
    assert [e.name for e in run.effects()] == ["pay"]
    assert [t for t in types(run) if t.startswith("effect")] == ["effect", "effect_replayed"]


def test_aonce_awaits_async_side_effects_and_once_refuses_them(store: Checkpointer) -> None:
    async def charge() -> dict[str, int]:
        await asyncio.sleep(0)
        return {"charged": 5}

    async def node(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        return {"r": await ctx.aonce("charge", charge)}

    run = one_node(node, store)
    run.run()
    assert run.state == {"r": {"charged": 5}}

    def wrong(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.once("charge", charge)

    with pytest.raises(NodeFailed, match=r"use await ctx\.aonce"):
        one_node(wrong, store).run()


def test_effect_results_must_be_json(store: Checkpointer) -> None:
    def node(state: dict[str, Any], ctx: NodeContext) -> None:
        ctx.once("x", lambda: {1, 2})

    with pytest.raises(NodeFailed, match=r"ctx.once\('x'\) result"):
        one_node(node, store).run()


def test_the_ledger_keeps_the_first_result_for_a_key(store: Checkpointer) -> None:
    first = store.record_effect("k", run_id="r", step=0, node="n", name="pay", result_json="1")
    again = store.record_effect("k", run_id="r", step=0, node="n", name="pay", result_json="2")
    assert (first, again, store.recorded_effect("k")) == ("1", "1", "1")
    assert store.recorded_effect("other") is None
    assert [(e.key, e.result) for e in store.effects("r")] == [("k", 1)]
