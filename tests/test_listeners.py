"""One listener mechanism: workflows, machines, instances and breakers tell theirs alike."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentnb import CircuitBreaker, SqliteCheckpointer, StateGraph, Status, TransitionNotAllowed
from agentnb._listeners import Listeners

# -- the mechanism -----------------------------------------------------------------------------


def test_a_listener_hears_every_notification_until_removed_and_removing_twice_is_harmless() -> None:
    heard: list[tuple[str, int]] = []
    listeners: Listeners[[int]] = Listeners("counter")
    remove_a = listeners.add(lambda n: heard.append(("a", n)))
    listeners.add(lambda n: heard.append(("b", n)))
    listeners.notify(1)
    remove_a()
    remove_a()  # harmless, and does not remove b
    listeners.notify(2)
    assert heard == [("a", 1), ("b", 1), ("b", 2)]
    assert len(listeners) == 1


def test_the_same_listener_added_twice_is_told_twice_and_each_remover_removes_one() -> None:
    heard: list[int] = []
    listeners: Listeners[[int]] = Listeners("counter")
    first = listeners.add(heard.append)
    listeners.add(heard.append)
    listeners.notify(1)
    first()
    first()
    listeners.notify(2)
    assert heard == [1, 1, 2]


def test_a_raising_listener_is_reported_as_a_warning_and_the_others_still_hear() -> None:
    heard: list[int] = []
    listeners: Listeners[[int]] = Listeners("counter")

    def broken(n: int) -> None:
        raise ValueError(f"bug at {n}")

    listeners.add(broken)
    listeners.add(heard.append)
    with pytest.warns(RuntimeWarning, match=r"counter listener .*broken raised ValueError: bug"):
        listeners.notify(7)
    assert heard == [7]


def test_a_listener_may_remove_itself_and_add_another_while_it_is_told() -> None:
    heard: list[str] = []
    listeners: Listeners[[]] = Listeners("ping")

    def once() -> None:
        heard.append("once")
        remove_once()
        listeners.add(lambda: heard.append("later"))

    remove_once = listeners.add(once)
    listeners.notify()  # the snapshot: "later" is told from the next notification on
    listeners.notify()
    assert heard == ["once", "later"]


def test_a_listener_must_be_callable() -> None:
    with pytest.raises(TypeError, match="must be callable"):
        Listeners[[int]]("counter").add("print")  # type: ignore[arg-type]


# -- the four owners, one behaviour --------------------------------------------------------------


@dataclass
class Owner:
    """Something that tells listeners: how to subscribe, make it tell, and check it went on."""

    subscribe: Callable[[Callable[..., object]], Callable[[], None]]
    trigger: Callable[[], None]
    went_on: Callable[[], int]  # how many times the work got done
    locks: list[Any]


def workflow_owner(tmp_path: Path) -> Owner:
    store = SqliteCheckpointer(tmp_path / "runs.sqlite3")
    graph = StateGraph("one")
    graph.add_node("only", lambda state: {"done": True})
    graph.set_entry_point("only")
    workflow = graph.compile(store)
    return Owner(
        workflow.subscribe,
        lambda: workflow.start({}).run() and None,
        lambda: len(workflow.runs(Status.COMPLETED)),
        [store._lock],
    )


def machine_owner(tmp_path: Path) -> Owner:
    from tests.fsm.fsm_support import traffic_light

    light = traffic_light().start()
    return Owner(
        light.machine.subscribe,
        lambda: light.send("timer") and None,
        lambda: len(light.history),
        [light._lock],
    )


def refusal_owner(tmp_path: Path) -> Owner:
    from tests.fsm.fsm_support import traffic_light

    light = traffic_light().start()
    refused = []

    def refuse() -> None:
        with pytest.raises(TransitionNotAllowed):
            light.send("walk")
        refused.append(1)

    return Owner(light.on_refused, refuse, lambda: len(refused), [light._lock])


def chart_owner(tmp_path: Path) -> Owner:
    from agentnb import State, Statechart

    chart = Statechart("switch", [State("off", on={"flip": "on"}), State("on", on={"flip": "off"})])
    switch = chart.start()
    return Owner(
        chart.subscribe,
        lambda: switch.send("flip") and None,
        lambda: len(switch.history),
        [switch.store._lock],  # type: ignore[attr-defined]
    )


def chart_refusal_owner(tmp_path: Path) -> Owner:
    from agentnb import State, Statechart

    switch = Statechart("switch", [State("off", on={"flip": "on"}), State("on")]).start(strict=True)
    refused = []

    def refuse() -> None:
        with pytest.raises(TransitionNotAllowed):
            switch.send("walk")
        refused.append(1)

    return Owner(switch.on_refused, refuse, lambda: len(refused), [])


def breaker_owner(tmp_path: Path) -> Owner:
    breaker = CircuitBreaker("payments", failures=1)
    moves = []

    def flip() -> None:
        breaker.failure() if breaker.state == "closed" else breaker.reset()
        moves.append(breaker.state)

    return Owner(breaker.subscribe, flip, lambda: len(moves), [breaker._lock])


OWNERS = {
    "workflow": workflow_owner,
    "machine": machine_owner,
    "instance": refusal_owner,
    "breaker": breaker_owner,
    "statechart": chart_owner,
    "chart instance": chart_refusal_owner,
}


@pytest.fixture(params=sorted(OWNERS))
def owner(request: pytest.FixtureRequest, tmp_path: Path) -> Owner:
    return OWNERS[request.param](tmp_path)


def free(lock: Any) -> bool:
    """Whether another thread could take ``lock`` now (works for Lock and RLock)."""
    got: list[bool] = []

    def take() -> None:
        got.append(lock.acquire(blocking=False))
        if got[0]:
            lock.release()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join()
    return got[0]


def test_every_owner_calls_its_listeners_outside_its_locks(owner: Owner) -> None:
    held: list[bool] = []
    owner.subscribe(lambda *args: held.append(all(free(lock) for lock in owner.locks)))
    owner.trigger()
    assert held
    assert all(held)


def test_a_raising_listener_never_stops_an_owners_work(owner: Owner) -> None:
    heard: list[object] = []

    def broken(*args: object) -> None:
        raise RuntimeError("listener bug")

    owner.subscribe(broken)
    owner.subscribe(lambda *args: heard.append(args))
    with pytest.warns(RuntimeWarning, match="listener bug"):
        owner.trigger()
    assert owner.went_on() == 1
    assert heard


def test_removing_an_owners_listener_twice_is_harmless(owner: Owner) -> None:
    heard: list[object] = []
    remove = owner.subscribe(lambda *args: heard.append(args))
    owner.trigger()
    told = len(heard)
    remove()
    remove()
    owner.trigger()
    assert told >= 1
    assert len(heard) == told
    assert owner.went_on() == 2
