"""Helpers for testing code built on agentnb.

:func:`capture_events` records what runs, state machines and circuit breakers announce while
a block runs — the events a workflow saves, the transitions a machine commits, the events an
instance refuses, a breaker's state changes — so a test asserts on them instead of
subscribing by hand::

    from agentnb.examples import build_refund_workflow
    from agentnb.testing import capture_events

    def test_a_large_refund_waits_for_a_human():
        workflow = build_refund_workflow()
        with capture_events(workflow) as captured:
            workflow.start({"requested": 1000}).run()
        assert captured.types()[-1] == "interrupted"

What another process writes reaches no listener here: read it from the store
(``checkpointer.events(run_id)``).

:func:`throwaway_postgres` starts a PostgreSQL server of its own for a block (a temporary
directory, a random port on 127.0.0.1) and yields its DSN — for a course's notebook, a
test suite or a benchmark; :class:`ThrowawayPostgres` is the same server as an object
that can also restart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from agentnb._postgres_server import ThrowawayPostgres, throwaway_postgres
from agentnb.errors import TransitionNotAllowed
from agentnb.fsm.chart import Statechart
from agentnb.fsm.instance import MachineInstance
from agentnb.fsm.machine import StateMachine
from agentnb.fsm.records import TransitionRecord
from agentnb.graph.run import Run
from agentnb.graph.workflow import Workflow
from agentnb.resilience import CircuitBreaker
from agentnb.store.records import Event

__all__ = ["CapturedEvents", "ThrowawayPostgres", "capture_events", "throwaway_postgres"]

Source = Workflow | Run | StateMachine | Statechart | MachineInstance | CircuitBreaker
T = TypeVar("T")


class CapturedEvents:
    """What the sources given to :func:`capture_events` announced, in the order they did.

    Attributes:
        events: the run events saved in this process (``Event``: ``type``, ``node``, ...).
        transitions: the state-machine transitions committed (``TransitionRecord``).
        refusals: the ``TransitionNotAllowed`` errors strict instances raised.
        breaker_changes: ``(breaker name, old state, new state)`` per circuit-breaker move.

    Example:
        >>> from agentnb import StateGraph
        >>> from agentnb.testing import capture_events
        >>> graph = StateGraph("g").add_node("a", lambda state: {}).set_entry_point("a")
        >>> workflow = graph.compile()
        >>> with capture_events(workflow) as captured:
        ...     _ = workflow.invoke({})
        >>> captured.types()
        ['run_started', 'node_start', 'state_update', 'completed']
        >>> [event.node for event in captured.of_type("node_start")]
        ['a']
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.transitions: list[TransitionRecord] = []
        self.refusals: list[TransitionNotAllowed] = []
        self.breaker_changes: list[tuple[str, str, str]] = []
        self._changed = threading.Condition()

    def types(self, run_id: str | None = None) -> list[str]:
        """The captured events' types (of one run when ``run_id`` is given), in order."""
        return [str(e.type) for e in self.events if run_id is None or e.run_id == run_id]

    def of_type(self, type: str) -> list[Event]:
        """The captured events whose ``type`` is ``type`` (e.g. ``"node_start"``)."""
        return [e for e in self.events if e.type == type]

    def wait_for(self, type: str, *, run_id: str | None = None, timeout: float = 10.0) -> Event:
        """Wait until an event of ``type`` (of ``run_id``, if given) is captured; return it.

        For runs driven in another thread (a widget's worker, ``workflow.aresume``): waits on
        a condition, never polls.

        Raises:
            TimeoutError: none came within ``timeout`` seconds; the message lists what did.
        """

        def found() -> Event | None:
            return next(
                (e for e in self.events if e.type == type and run_id in (None, e.run_id)),
                None,
            )

        deadline = time.monotonic() + timeout
        with self._changed:
            while (event := found()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"no {type!r} event{f' of run {run_id!r}' if run_id else ''} within "
                        f"{timeout} s; captured {self.types()}"
                    )
                self._changed.wait(left)
        return event

    def _add(self, into: list[T], item: T) -> None:
        with self._changed:
            into.append(item)
            self._changed.notify_all()

    def __len__(self) -> int:
        return (
            len(self.events)
            + len(self.transitions)
            + len(self.refusals)
            + len(self.breaker_changes)
        )

    def __repr__(self) -> str:
        return (
            f"<CapturedEvents: {len(self.events)} events, {len(self.transitions)} transitions, "
            f"{len(self.refusals)} refusals, {len(self.breaker_changes)} breaker changes>"
        )


def _listen(captured: CapturedEvents, source: object) -> list[Callable[[], None]]:
    """Subscribe ``captured`` to ``source``; return the removers."""
    if isinstance(source, Workflow):
        return [source.subscribe(lambda event: captured._add(captured.events, event))]
    if isinstance(source, Run):
        run_id = source.run_id

        def run_event(event: Event) -> None:
            if event.run_id == run_id:
                captured._add(captured.events, event)

        return [source.workflow.subscribe(run_event)]
    if isinstance(source, StateMachine | Statechart):
        return [source.subscribe(lambda _, record: captured._add(captured.transitions, record))]
    if isinstance(source, MachineInstance):
        instance_id = source.id

        def transition(_: Any, record: TransitionRecord) -> None:
            if record.instance_id == instance_id:
                captured._add(captured.transitions, record)

        return [
            source.machine.subscribe(transition),
            source.on_refused(lambda error: captured._add(captured.refusals, error)),
        ]
    if isinstance(source, CircuitBreaker):
        return [
            source.subscribe(
                lambda breaker, old, new: captured._add(
                    captured.breaker_changes, (breaker.name, old, new)
                )
            )
        ]
    raise TypeError(
        f"capture_events() takes workflows, runs, state machines, statecharts, their "
        f"instances and circuit breakers, not {type(source).__name__} {source!r}"
    )


@contextmanager
def capture_events(*sources: Source) -> Iterator[CapturedEvents]:
    """Capture what ``sources`` announce inside the ``with`` block.

    Args:
        sources: a :class:`~agentnb.Workflow` (every run's events), a :class:`~agentnb.Run`
            (that run's events), a ``StateMachine`` or ``Statechart`` (every instance's
            transitions), a ``MachineInstance`` (its transitions and
            refused events; the definition it follows when the block starts), or a
            :class:`~agentnb.CircuitBreaker`.

    Yields:
        A :class:`CapturedEvents` that fills up as things happen and stops at the block's
        end (the listeners are removed even if the block raises).

    Example:
        >>> from agentnb.examples import build_refund_workflow
        >>> workflow = build_refund_workflow()
        >>> with capture_events(workflow) as captured:
        ...     run = workflow.start({"requested": 5}).run()
        >>> captured.types()[0], captured.types()[-1]
        ('run_started', 'completed')
    """
    if not sources:
        raise TypeError("capture_events() needs at least one workflow, run, machine or breaker")
    captured = CapturedEvents()
    removers: list[Callable[[], None]] = []
    try:
        for source in sources:
            removers += _listen(captured, source)
        yield captured
    finally:
        for remove in removers:
            remove()
