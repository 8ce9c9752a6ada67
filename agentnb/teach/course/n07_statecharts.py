"""Notebook 07 · Statecharts: a parallel light region, deep history, a delayed transition, the
panel's buttons.

A statechart's event record names the *atomic* states of the configuration before and after
the event (``"closed heating on"``); the checkers read those, the pending timers of the
store and the instances' snapshots, never the chart's code.
"""

from __future__ import annotations

import itertools
from typing import Any

from agentnb.fsm.records import InstanceSnapshot, TimerRecord, TransitionRecord
from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "07-statecharts"

DOOR = {"closed", "opened"}
LIGHT = {"on", "off"}
OVEN_NOT_COOKING = {"idle", "paused", "done"}
CLICKS = ["start", "defrost", "stop", "start"]


def _atoms(states: str) -> set[str]:
    return set(states.split())


def _fired(evidence: Evidence, snap: InstanceSnapshot) -> list[TransitionRecord]:
    return [r for r in evidence.history(snap.instance_id) if not r.ignored]


def _timers(evidence: Evidence, instance_id: str) -> list[TimerRecord]:
    listing = getattr(evidence.machines, "timers", None)
    return list(listing(instance_id)) if listing is not None else []


def _cooking(atoms: set[str]) -> bool:
    """An oven atom that is neither idle, paused nor done is a sub-state of ``cooking``."""
    return bool(atoms - DOOR - LIGHT - OVEN_NOT_COOKING)


@exercise(
    "07.1",
    "A light region",
    hint="A parallel state's regions are all active: add a third region to `appliance` whose "
    "`off` and `on` states move by eventless transitions (`always=`) guarded with `In(...)`; "
    "the guard may name a compound state. Then open the door, close it, and start the oven.",
    notebook=NOTEBOOK,
)
def light_region(evidence: Evidence) -> Outcome:
    lit = [
        s
        for s in evidence.instances()
        if any(_atoms(r.target) & LIGHT for r in _fired(evidence, s))
    ]
    if not lit:
        return no("no instance has a configuration with a light state `on` or `off`")
    for snap in lit:
        seen = {"door": False, "cooking": False, "off": False}
        wrong: TransitionRecord | None = None
        for record in _fired(evidence, snap):
            atoms = _atoms(record.target)
            should = "opened" in atoms or _cooking(atoms)
            if ("on" in atoms) != should or not atoms & LIGHT:
                wrong = record
                break
            seen["door"] |= "on" in atoms and "opened" in atoms and not _cooking(atoms)
            seen["cooking"] |= "on" in atoms and "closed" in atoms and _cooking(atoms)
            seen["off"] |= "off" in atoms
        if wrong is not None:
            state = "on" if "on" in _atoms(wrong.target) else "off"
            return no(
                f"instance {snap.instance_id!r}: after `{wrong.event}` (record #{wrong.seq}) the "
                f"configuration was {wrong.target!r}, and the light was {state}"
            )
        if all(seen.values()):
            return ok(
                f"instance {snap.instance_id!r}: the light was on with the door open, on while "
                "cooking behind a closed door, and off otherwise, in every recorded step"
            )
    cases = {"door": "on for the door", "cooking": "on for cooking", "off": "off"}
    missing = ", ".join(cases[k] for k, v in seen.items() if not v)
    return no(
        f"instance {lit[-1].instance_id!r} follows the rule, but its history never shows the "
        f"light {missing}",
        "Drive it through all three cases: open and close the door, then start the oven.",
    )


@exercise(
    "07.2",
    "Deep history",
    hint="A shallow history remembers only the direct child of its parent state; a deep one "
    "(`History(..., deep=True)`) remembers the atomic states below it. Leave `cooking` from "
    "`resting` and come back through the history.",
    notebook=NOTEBOOK,
)
def deep_history(evidence: Evidence) -> Outcome:
    for snap in evidence.instances():
        fired = _fired(evidence, snap)
        for out, back in itertools.pairwise(fired):
            if not ("resting" in _atoms(out.source) and "paused" in _atoms(out.target)):
                continue  # the pause that leaves `cooking` from `resting`, and what follows
            if "paused" in _atoms(back.source) and "resting" in _atoms(back.target):
                return ok(
                    f"instance {snap.instance_id!r} left `resting` on `{out.event}` and came "
                    f"back to `resting` on `{back.event}`"
                )
            return no(
                f"instance {snap.instance_id!r} left `resting` on `{out.event}`, but "
                f"`{back.event}` went to {back.target!r}"
            )
    return no("no instance paused the oven while it was `resting` in `defrosting`")


@exercise(
    "07.3",
    "A delayed transition inside cooking",
    hint="`after={seconds: target}` schedules a timer when its state is entered; moving "
    "between two children of `cooking` does not exit `cooking`, so its own entry and exit "
    "actions do not run. Look at the pending timers.",
    notebook=NOTEBOOK,
)
def delayed_transition(evidence: Evidence) -> Outcome:
    for snap in evidence.instances():
        timed = [
            r
            for r in _fired(evidence, snap)
            if r.event_id.startswith("timer:")
            and "defrosting" in _atoms(r.source)
            and "heating" in _atoms(r.target)
        ]
        if not timed:
            continue
        beeps = [t for t in _timers(evidence, snap.instance_id) if t.event == "beep"]
        if not beeps:
            return no(
                f"instance {snap.instance_id!r} switched to `heating` on a timer, but no "
                "`beep` timer is pending",
                "Stop the clock after the switch, before the oven beeps, and predict then.",
            )
        answer = _number(evidence.answer)
        if answer is None:
            return no("no prediction given: pass answer=<the clock time of the beep>")
        if answer == beeps[0].fire_at:
            return ok(
                f"instance {snap.instance_id!r} went defrosting → heating on its timer "
                f"(`{timed[0].event}`), and `beep` is still due at {beeps[0].fire_at:g}, as you "
                "predicted"
            )
        return no(
            f"instance {snap.instance_id!r} went defrosting → heating on its timer, and "
            f"`beep` is due at {beeps[0].fire_at:g}, not at {answer:g} as you predicted"
        )
    return no("no instance went from `defrosting` to `heating` by a timer of its own")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@exercise(
    "07.4",
    "Predict, then click the panel's buttons",
    hint="Which state does `start` target: `cooking`, or its history state `mode`? Entering "
    "a compound state by name enters its initial child; leaving it runs its exit actions, "
    "entering it its entry actions. Step through each click's microsteps.",
    notebook=NOTEBOOK,
)
def predict_then_click(evidence: Evidence) -> Outcome:
    answer = evidence.answer
    if not isinstance(answer, dict) or not {"oven", "timers"} <= set(answer):
        return no("no prediction given: pass answer={'oven': '<state>', 'timers': <count>}")
    for snap in evidence.instances():
        fired = _fired(evidence, snap)
        if [r.event for r in fired[-len(CLICKS) :]] != CLICKS:
            continue
        oven = sorted(_atoms(fired[-1].target) - DOOR - LIGHT)
        timers = len(_timers(evidence, snap.instance_id))
        right_oven = [str(answer["oven"]).strip()] == oven
        right_timers = answer["timers"] == timers
        if right_oven and right_timers:
            return ok(
                f"instance {snap.instance_id!r} ended in `{oven[0]}` with {timers} pending "
                "timer(s) after the clicks, as you predicted"
            )
        halves = [
            f"the oven ended in `{oven[0] if len(oven) == 1 else ', '.join(oven)}`, "
            f"you predicted `{answer['oven']}`"
            if not right_oven
            else f"the oven's state `{oven[0]}` is right",
            f"{timers} timer(s) are pending, you predicted {answer['timers']!r}"
            if not right_timers
            else f"the count of pending timers ({timers}) is right",
        ]
        return no(f"instance {snap.instance_id!r} recorded the clicks: " + "; ".join(halves) + ".")
    return no(
        "no instance's last events are " + ", ".join(CLICKS),
        "Click the buttons of panel.view() in this order (or send the events): "
        + ", ".join(CLICKS)
        + ".",
    )
