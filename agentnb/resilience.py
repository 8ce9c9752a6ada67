"""Surviving flaky dependencies: retry policies, timeouts and circuit breakers.

Attach them per node::

    payments = CircuitBreaker("payments", failures=3, reset_after=30)
    graph.add_node("refund", refund, timeout=5, retry=Retry(attempts=3), breaker=payments)

* ``timeout`` — seconds; a slower attempt is cancelled and recorded as a ``timeout`` event.
  Async nodes are cancelled where they wait; a sync node with a timeout runs in a worker
  thread, which Python cannot stop: the run moves on and the thread's result is dropped.
* ``retry`` — a :class:`Retry` policy (or an int, the number of attempts): exponential
  backoff with jitter, only for the exceptions it names; each retry is a ``retry`` event.
* ``breaker`` — a :class:`CircuitBreaker` shared by every node that calls the same
  dependency. After ``failures`` consecutive failures it opens: calls fail fast with a
  ``breaker_open`` event and :class:`~agentnb.errors.BreakerOpen`. After ``reset_after``
  seconds one trial call goes through (half-open); success closes it, failure re-opens it.

Why not pybreaker: its async support is built on Tornado coroutines, not asyncio, so the
breaker here is a small state machine with an injectable clock (which also makes it
testable without sleeping). Why not tenacity for retries: the retry loop wraps *every*
call of a guarded node, including the first, successful one, and tenacity's per-call
machinery (``AsyncRetrying`` and its call state) measured ~19 µs there — more than a whole
in-memory step. The policy is four numbers; :meth:`Retry.wait` is its backoff, and the
loop (in the driver) is tested in ``tests/test_resilience.py``.
"""

from __future__ import annotations

import inspect
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentnb._listeners import Listeners
from agentnb.errors import BreakerOpen, DefinitionError, describe
from agentnb.store.records import EventType

__all__ = ["CircuitBreaker", "Retry", "guarded_call"]


@dataclass(frozen=True)
class Retry:
    """How to retry a failing node.

    Args:
        attempts: total attempts, the first included (``1`` means no retry).
        initial: the first wait in seconds; each next wait is ``multiplier`` times longer.
        maximum: the longest wait.
        multiplier: the backoff factor.
        jitter: up to this many random seconds added to each wait, so that many runs
            retrying at once do not hit the dependency in lockstep.
        on: the exception types that are retried; others fail the run at once.
            A :class:`~agentnb.errors.BreakerOpen` is never retried.

    Example:
        >>> from agentnb import Retry, StateGraph
        >>> calls = []
        >>> def flaky(state):
        ...     calls.append(1)
        ...     if len(calls) < 3:
        ...         raise ConnectionError("try again")
        ...     return {"ok": True}
        >>> retry = Retry(attempts=3, initial=0, jitter=0)  # no wait between attempts, here
        >>> graph = StateGraph("flaky").add_node("call", flaky, retry=retry)
        >>> graph.set_entry_point("call").compile().invoke({}).state, len(calls)
        ({'ok': True}, 3)
        >>> Retry(initial=0.5, jitter=0).wait(3)  # seconds after the third failure: 0.5 * 2 * 2
        2.0
    """

    attempts: int = 3
    initial: float = 0.1
    maximum: float = 10.0
    multiplier: float = 2.0
    jitter: float = 0.1
    on: tuple[type[BaseException], ...] = (Exception,)

    def __post_init__(self) -> None:
        if not isinstance(self.attempts, int) or self.attempts < 1:
            raise DefinitionError(
                f"Retry(attempts={self.attempts!r}) must be a positive int",
                culprit="attempts",
                fix="Count the first attempt too: attempts=3 retries twice.",
            )
        for name in ("initial", "maximum", "jitter"):
            if getattr(self, name) < 0:
                raise DefinitionError(f"Retry({name}=...) must not be negative", culprit=name)
        if self.multiplier < 1:
            raise DefinitionError("Retry(multiplier=...) must be at least 1", culprit="multiplier")
        if not self.on or not all(
            isinstance(t, type) and issubclass(t, BaseException) for t in self.on
        ):
            raise DefinitionError(
                "Retry(on=...) must be a tuple of exception types",
                culprit="on",
                fix="For example on=(TimeoutError, ConnectionError).",
            )

    @classmethod
    def coerce(cls, value: Retry | int | None) -> Retry | None:
        """``None``, an attempt count, or a policy — as a policy (or ``None``)."""
        if value is None or isinstance(value, Retry):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(attempts=value)
        raise DefinitionError(
            f"retry={value!r} is not a Retry policy or a number of attempts",
            culprit="retry",
            fix="Pass retry=3 or retry=Retry(attempts=3, on=(TimeoutError,)).",
        )

    def wait(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1 for the first)."""
        base = self.initial * self.multiplier ** (attempt - 1)
        return min(self.maximum, base + random.uniform(0, self.jitter))

    def retries(self, error: BaseException) -> bool:
        """Whether ``error`` is worth another attempt under this policy."""
        return isinstance(error, self.on) and not isinstance(error, BreakerOpen)


BreakerListener = Callable[["CircuitBreaker", str, str], object]


@dataclass(eq=False)
class CircuitBreaker:
    """Stops calling a failing dependency for a while; shared by the nodes that call it.

    Args:
        name: names the dependency in events, errors and metrics.
        failures: consecutive failures that open the breaker.
        reset_after: seconds the breaker stays open before letting one trial call through.
        clock: a monotonic clock in seconds (tests pass a fake one).

    Example:
        >>> from agentnb import CircuitBreaker
        >>> now = [0.0]
        >>> breaker = CircuitBreaker("payments", failures=2, reset_after=30, clock=lambda: now[0])
        >>> breaker.failure(); breaker.failure()  # two failures in a row open it
        >>> breaker.allow()
        False
        >>> now[0] = 31.0  # after reset_after, one trial call is let through
        >>> breaker.allow()
        True
    """

    name: str
    failures: int = 5
    reset_after: float = 30.0
    clock: Callable[[], float] = time.monotonic
    state: str = field(default="closed", init=False)
    failure_count: int = field(default=0, init=False)
    opened_at: float = field(default=0.0, init=False)
    _probing: bool = field(default=False, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _listeners: Listeners[[CircuitBreaker, str, str]] = field(
        default_factory=lambda: Listeners("circuit breaker"), init=False, repr=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.failures, int) or self.failures < 1:
            raise DefinitionError(
                f"CircuitBreaker(failures={self.failures!r}) must be a positive int",
                culprit=self.name,
            )
        if self.reset_after < 0:
            raise DefinitionError("CircuitBreaker(reset_after=...) must not be negative")

    def subscribe(self, listener: BreakerListener) -> Callable[[], None]:
        """Call ``listener(breaker, old_state, new_state)`` on every state change.

        Called after the breaker's lock is released; one that raises is reported with a
        :class:`RuntimeWarning` and changes nothing. Returns a function that unsubscribes
        it (calling it twice is harmless).
        """
        return self._listeners.add(listener)

    def _move(self, new: str) -> tuple[str, str] | None:
        """Change state (under the lock); the change to announce once it is released."""
        old, self.state = self.state, new
        return (old, new) if old != new else None

    def _announce(self, moved: tuple[str, str] | None) -> None:
        if moved is not None:
            self._listeners.notify(self, *moved)

    def retry_in(self) -> float:
        """Seconds until an open breaker lets a trial call through (0 if it would now)."""
        return max(0.0, self.opened_at + self.reset_after - self.clock())

    def allow(self) -> bool:
        """Whether a call may go ahead now; an open breaker past its cool-down half-opens."""
        moved = None
        with self._lock:
            if self.state == "closed":
                return True
            if self.state == "open":
                if self.retry_in() > 0:
                    return False
                moved = self._move("half_open")
            allowed = not self._probing  # half-open: exactly one trial call at a time
            self._probing = True
        self._announce(moved)
        return allowed

    def success(self) -> None:
        """Record a successful call: the breaker closes and forgets past failures."""
        with self._lock:
            self._probing = False
            self.failure_count = 0
            moved = self._move("closed")
        self._announce(moved)

    def failure(self) -> None:
        """Record a failed call; enough of them (or a failed trial) open the breaker."""
        moved = None
        with self._lock:
            self._probing = False
            self.failure_count += 1
            if self.state == "half_open" or self.failure_count >= self.failures:
                self.opened_at = self.clock()
                moved = self._move("open")
        self._announce(moved)

    def reset(self) -> None:
        """Close the breaker by hand (after fixing the dependency): as a successful call."""
        self.success()

    def __repr__(self) -> str:
        return f"<CircuitBreaker {self.name!r}: {self.state}, {self.failure_count} failures>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


Report = Callable[[str, dict[str, Any]], None]
"""``report(event_type, payload)``: how a guarded call tells its caller what happened."""


async def guarded_call(
    fn: Callable[..., Any],
    make_args: Callable[[], tuple[Any, ...]],
    *,
    timeout: float | None,
    retry: Retry | None,
    breaker: CircuitBreaker | None,
    is_async: bool,
    owner: str,
    name: str,
    report: Report,
    what: str = "node",
    failed: Exception | None = None,
) -> Any:
    """Call ``fn(*make_args())`` under a timeout, a retry policy and a circuit breaker.

    ``failed`` says the first attempt was already made (by a caller's fast path) and
    raised it: the policy takes over from the first retry.

    Used for workflow nodes and for state-machine actions alike. Each attempt gets fresh
    arguments; ``report`` hears of every ``retry``, ``timeout`` and ``breaker_open``.

    Raises:
        BreakerOpen: the breaker refused the call (never retried).
        NodeTimeout: the last attempt ran past ``timeout``.
        Exception: whatever the last attempt raised.
    """
    import asyncio  # here, not at the top: `import agentnb` stays free of asyncio

    from agentnb.errors import NodeTimeout

    async def attempt() -> Any:
        if breaker is not None and not breaker.allow():
            retry_in = breaker.retry_in()
            report(
                EventType.BREAKER_OPEN, {"breaker": breaker.name, "retry_in": round(retry_in, 3)}
            )
            raise BreakerOpen(breaker.name, name, retry_in, run_id=owner, what=what)
        try:
            if timeout is None:
                result = fn(*make_args())
                if inspect.isawaitable(result):
                    result = await result
            else:
                try:
                    async with asyncio.timeout(timeout):
                        if is_async:
                            result = await fn(*make_args())
                        else:
                            # A blocking sync call cannot be interrupted: run it in a thread
                            # and stop waiting for it at the deadline (its result is dropped).
                            result = await asyncio.to_thread(fn, *make_args())
                            if inspect.isawaitable(result):
                                result = await result
                except TimeoutError:
                    report(EventType.TIMEOUT, {"seconds": timeout})
                    raise NodeTimeout(owner, name, timeout, what=what) from None
        except Exception:
            if breaker is not None:
                breaker.failure()
            raise
        if breaker is not None:
            breaker.success()
        return result

    plain = breaker is None and timeout is None  # retry only: no wrapper per attempt
    number, error = 1, failed
    while True:
        if error is None:
            try:
                if plain:
                    result = fn(*make_args())
                    return await result if inspect.isawaitable(result) else result
                return await attempt()
            except Exception as exc:
                error = exc
        if retry is None or number >= retry.attempts or not retry.retries(error):
            raise error
        wait = retry.wait(number)
        payload = {
            "attempt": number,
            "error": describe(error),
            "wait": round(wait, 4),
        }
        report(EventType.RETRY, payload)
        await asyncio.sleep(wait)
        number, error = number + 1, None
