"""State-machine benchmark: transitions per second, beside python-statemachine and transitions.

Run with ``python bench/bench_fsm.py`` (``--events N`` to change the run length). Every
figure is measured in this run, on the same traffic-light table (RED/GREEN/YELLOW; ``timer``
cycles, ``emergency`` turns GREEN or YELLOW red) and the same event sequence
(``timer, timer, emergency`` repeated), each engine checked to end in the same state:

* agentnb with :class:`~agentnb.fsm.MemoryMachineStore` (in memory);
* agentnb with ``SqliteCheckpointer(path).machines`` (each transition committed to SQLite;
  ``n/a`` when this checkpointer has no machine store);
* python-statemachine and transitions (in memory only: neither persists);
* the persistence floor: plain sqlite3, one INSERT + COMMIT per transition, same pragmas.

Then a nested/parallel media-player chart (``stopped`` / ``playing`` with two compound
regions, ``track`` and ``volume``): agentnb's :class:`~agentnb.Statechart` in memory and
persisted, beside python-statemachine 3's ``StateChart`` with the same chart and events,
each checked to end in the same configuration.

An agentnb transition does more than the two libraries: it validates the payload as JSON,
records the event (id, payload, delta, time) in the history and keeps the context as JSON,
so an in-memory instance behaves like a persisted one. The ratios show what that costs.

python-statemachine and transitions are bench-only: ``pip install python-statemachine
transitions``; a missing one prints ``n/a``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from enum import Enum, auto
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentnb import SqliteCheckpointer
from agentnb.fsm import MemoryMachineStore, StateMachine

REPEATS = 5
PATTERN = ("timer", "timer", "emergency")
TABLE = (
    ("RED", "timer", "GREEN"),
    ("GREEN", "timer", "YELLOW"),
    ("YELLOW", "timer", "RED"),
    ("GREEN", "emergency", "RED"),
    ("YELLOW", "emergency", "RED"),
)


class Light(Enum):
    RED = auto()
    GREEN = auto()
    YELLOW = auto()


def events(n: int) -> list[str]:
    return [PATTERN[i % len(PATTERN)] for i in range(n)]


def expected_state(sequence: list[str]) -> str:
    moves = {(s, e): t for s, e, t in TABLE}
    state = "RED"
    for event in sequence:
        state = moves[state, event]
    return state


def agentnb_machine() -> StateMachine:
    lights = StateMachine("traffic_light", states=Light, initial=Light.RED)
    for source, event, target in TABLE:
        lights.add_transition(Light[source], event, Light[target])
    return lights


Measure = Callable[[list[str]], float]
"""Runs the sequence once; returns the seconds spent sending events (setup excluded)."""


def agentnb_run(make_store: Callable[[], Any], close: Callable[[], None] = lambda: None) -> Measure:
    machine = agentnb_machine()
    counter = iter(range(10**9))

    def measure(sequence: list[str]) -> float:
        store = make_store()
        light = machine.start(f"light-{next(counter)}", store=store)
        t = time.perf_counter()
        for event in sequence:
            light.send(event)
        elapsed = time.perf_counter() - t
        assert light.state == expected_state(sequence), light.state
        close()
        return elapsed

    return measure


def agentnb_sqlite(folder: Path) -> Measure | None:
    counter = iter(range(10**9))
    open_stores: list[Any] = []

    def make_store() -> Any:
        checkpointer = SqliteCheckpointer(folder / f"fsm{next(counter)}.sqlite3")
        open_stores.append(checkpointer)
        return checkpointer.machines

    def close() -> None:
        while open_stores:
            open_stores.pop().close()

    probe = SqliteCheckpointer(folder / "probe.sqlite3")
    try:
        if getattr(probe, "machines", None) is None:
            return None
    finally:
        probe.close()
    return agentnb_run(make_store, close)


def python_statemachine() -> Measure | None:
    try:
        from statemachine import State
        from statemachine import StateMachine as PSM
    except ImportError:
        return None

    class TrafficLight(PSM):
        RED = State(initial=True)
        GREEN = State()
        YELLOW = State()
        timer = RED.to(GREEN) | GREEN.to(YELLOW) | YELLOW.to(RED)
        emergency = GREEN.to(RED) | YELLOW.to(RED)

    def measure(sequence: list[str]) -> float:
        light = TrafficLight()
        t = time.perf_counter()
        for event in sequence:
            light.send(event)
        elapsed = time.perf_counter() - t
        assert light.current_state_value == expected_state(sequence)
        return elapsed

    return measure


def transitions_lib() -> Measure | None:
    try:
        from transitions import Machine
    except ImportError:
        return None

    class Model:
        state: str

    def measure(sequence: list[str]) -> float:
        light = Model()
        Machine(
            model=light,
            states=[s.name for s in Light],
            transitions=[[e, s, t] for s, e, t in TABLE],
            initial="RED",
            auto_transitions=False,
        )
        trigger: Callable[[str], bool] = light.trigger  # type: ignore[attr-defined]
        t = time.perf_counter()
        for event in sequence:
            trigger(event)
        elapsed = time.perf_counter() - t
        assert light.state == expected_state(sequence)
        return elapsed

    return measure


def sqlite_floor(folder: Path) -> Measure:
    """Plain sqlite3: one INSERT + COMMIT per transition of a similar event row."""
    counter = iter(range(10**9))
    moves = {(s, e): t for s, e, t in TABLE}

    def measure(sequence: list[str]) -> float:
        db = sqlite3.connect(str(folder / f"floor{next(counter)}.sqlite3"), isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(
            "CREATE TABLE t (id TEXT, seq INT, event TEXT, source TEXT, target TEXT, "
            "payload TEXT, PRIMARY KEY (id, seq))"
        )
        state = "RED"
        t = time.perf_counter()
        for seq, event in enumerate(sequence, 1):
            target = moves[state, event]
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT INTO t VALUES ('light', ?, ?, ?, ?, ?)",
                (seq, event, state, target, json.dumps(None)),
            )
            db.execute("COMMIT")
            state = target
        elapsed = time.perf_counter() - t
        db.close()
        return elapsed

    return measure


def rate(measure: Measure | None, n: int) -> float | None:
    """Median transitions per second over :data:`REPEATS` runs of ``n`` events."""
    if measure is None:
        return None
    sequence = events(n)
    measure(sequence[: min(n, 300)])  # warm-up: imports, caches, statement cache
    return statistics.median(n / measure(sequence) for _ in range(REPEATS))


def parse_events() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=3_000, help="events per measured run")
    events_per_run: int = parser.parse_args().events
    return events_per_run


def main() -> None:
    n = parse_events()
    persisted_n = max(3, n // 3)  # SQLite commits are slower: keep the run short

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        memory = rate(agentnb_run(MemoryMachineStore), n)
        persisted = rate(agentnb_sqlite(folder), persisted_n)
        floor = rate(sqlite_floor(folder), persisted_n)
    psm = rate(python_statemachine(), n)
    trn = rate(transitions_lib(), n)

    def cell(value: float | None) -> str:
        return f"{value:>12,.0f}" if value is not None else f"{'n/a':>12}"

    def ratio(value: float | None, base: float | None) -> str:
        if value is None or base is None:
            return f"{'n/a':>10}"
        return f"{value / base:>9.2f}x"

    rows = [
        ("agentnb, MemoryMachineStore", memory, "memory"),
        ("agentnb, SqliteCheckpointer.machines", persisted, "sqlite"),
        ("python-statemachine (memory)", psm, "memory"),
        ("transitions (memory)", trn, "memory"),
        ("floor: sqlite3 INSERT+COMMIT", floor, "sqlite"),
    ]
    print(
        f"traffic light, {n:,} events per run (SQLite rows: {persisted_n:,}), median of {REPEATS}"
    )
    print(
        f"{'engine':<38}{'transitions/s':>14}{'µs each':>10}{'vs agentnb mem':>16}{'vs floor':>10}"
    )
    for name, value, kind in rows:
        each = f"{1e6 / value:>10.1f}" if value else f"{'n/a':>10}"
        vs_floor = ratio(value, floor) if kind == "sqlite" else f"{'':>10}"
        print(f"{name:<38}{cell(value):>14}{each}{ratio(value, memory):>16}{vs_floor}")
    if memory and psm and trn:
        print(
            f"\nagentnb in memory takes {psm / memory:.1f}x python-statemachine's time and "
            f"{trn / memory:.1f}x transitions' per transition."
        )
    if persisted and floor:
        print(
            f"agentnb persisted: {floor / persisted:.2f}x the plain-sqlite3 floor per transition."
        )


# -- a nested/parallel chart: agentnb Statechart beside python-statemachine's StateChart ----

CHART_PATTERN = ("play", "skip", "turn", "skip", "turn", "stop")


def chart_expected(sequence: list[str]) -> frozenset[str]:
    playing, track, volume = False, "t1", "low"
    for event in sequence:
        if event == "play" and not playing:
            playing, track, volume = True, "t1", "low"
        elif event == "stop" and playing:
            playing = False
        elif event == "skip" and playing:
            track = "t2" if track == "t1" else "t1"
        elif event == "turn" and playing:
            volume = "high" if volume == "low" else "low"
    if not playing:
        return frozenset({"stopped"})
    return frozenset({"playing", "track", track, "volume", volume})


def agentnb_chart() -> Any:
    from agentnb import Parallel, State, Statechart

    return Statechart(
        "player",
        [
            State("stopped", on={"play": "playing"}),
            Parallel(
                "playing",
                states=[
                    State(
                        "track",
                        states=[State("t1", on={"skip": "t2"}), State("t2", on={"skip": "t1"})],
                    ),
                    State(
                        "volume",
                        states=[
                            State("low", on={"turn": "high"}),
                            State("high", on={"turn": "low"}),
                        ],
                    ),
                ],
                on={"stop": "stopped"},
            ),
        ],
    )


def agentnb_chart_run(
    make_store: Callable[[], Any], close: Callable[[], None] = lambda: None
) -> Measure:
    chart = agentnb_chart()
    counter = iter(range(10**9))

    def measure(sequence: list[str]) -> float:
        player = chart.start(f"player-{next(counter)}", store=make_store())
        t = time.perf_counter()
        for event in sequence:
            player.send(event)
        elapsed = time.perf_counter() - t
        assert player.configuration == chart_expected(sequence), player.configuration
        close()
        return elapsed

    return measure


def agentnb_chart_sqlite(folder: Path) -> Measure:
    counter = iter(range(10**9))
    open_stores: list[Any] = []

    def make_store() -> Any:
        checkpointer = SqliteCheckpointer(folder / f"chart{next(counter)}.sqlite3")
        open_stores.append(checkpointer)
        return checkpointer.machines

    def close() -> None:
        while open_stores:
            open_stores.pop().close()

    return agentnb_chart_run(make_store, close)


def python_statechart() -> Measure | None:
    try:
        from statemachine import State, StateChart
    except ImportError:
        return None

    class Player(StateChart):  # type: ignore[misc]
        stopped = State(initial=True)

        class playing(State.Parallel):  # type: ignore[misc]
            class track(State.Compound):  # type: ignore[misc]
                t1 = State(initial=True)
                t2 = State()
                skip = t1.to(t2) | t2.to(t1)

            class volume(State.Compound):  # type: ignore[misc]
                low = State(initial=True)
                high = State()
                turn = low.to(high) | high.to(low)

        play = stopped.to(playing)
        stop = playing.to(stopped)

    def measure(sequence: list[str]) -> float:
        player = Player()
        t = time.perf_counter()
        for event in sequence:
            player.send(event)
        elapsed = time.perf_counter() - t
        assert frozenset(s.id for s in player.configuration) == chart_expected(sequence)
        return elapsed

    return measure


def chart_rate(measure: Measure | None, n: int) -> float | None:
    if measure is None:
        return None
    sequence = [CHART_PATTERN[i % len(CHART_PATTERN)] for i in range(n)]
    measure(sequence[: min(n, 120)])
    return statistics.median(n / measure(sequence) for _ in range(REPEATS))


def chart_main(n: int) -> None:
    persisted_n = max(6, n // 3)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        memory = chart_rate(agentnb_chart_run(MemoryMachineStore), n)
        persisted = chart_rate(agentnb_chart_sqlite(folder), persisted_n)
        floor = rate(sqlite_floor(folder), persisted_n)
    psm = chart_rate(python_statechart(), n)
    print(
        f"\nmedia player chart (a parallel state, two compound regions), {n:,} events per run "
        f"(SQLite rows: {persisted_n:,}), median of {REPEATS}"
    )
    print(f"{'engine':<42}{'transitions/s':>14}{'µs each':>10}")
    for name, value in (
        ("agentnb Statechart, MemoryMachineStore", memory),
        ("agentnb Statechart, SqliteCheckpointer", persisted),
        ("python-statemachine StateChart (memory)", psm),
        ("floor: sqlite3 INSERT+COMMIT", floor),
    ):
        text = f"{value:>14,.0f}{1e6 / value:>10.1f}" if value else f"{'n/a':>14}{'n/a':>10}"
        print(f"{name:<42}{text}")
    if memory and psm:
        print(f"agentnb chart in memory: {memory / psm:.2f}x python-statemachine's speed.")
    if persisted and floor:
        print(f"agentnb chart persisted: {floor / persisted:.2f}x the plain-sqlite3 floor.")


if __name__ == "__main__":
    main()
    chart_main(max(6, parse_events()))
