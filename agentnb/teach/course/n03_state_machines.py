"""Notebook 03 · State machines: a new state, a final state, the panel's buttons, event ids."""

from __future__ import annotations

from agentnb.teach.evidence import Evidence
from agentnb.teach.registry import exercise
from agentnb.teach.verdict import Outcome, no, ok

NOTEBOOK = "03-state-machines"

CLICKS = ["timer", "timer", "emergency", "timer"]


@exercise(
    "03.1",
    "A maintenance state",
    hint="One event may have a transition from several states: declare `emergency` from "
    "each colour into the new state, and a `repair` transition out of it. Then send them.",
    notebook=NOTEBOOK,
)
def maintenance_state(evidence: Evidence) -> Outcome:
    instances = evidence.instances()
    if not instances:
        return no("no machine instance is recorded yet")
    for snap in instances:
        fired = [r for r in evidence.history(snap.instance_id) if not r.ignored]
        # Enum-built machines name states by member (MAINTENANCE), files by value.
        into = {
            r.source for r in fired if r.event == "emergency" and r.target.lower() == "maintenance"
        }
        out = [r for r in fired if r.event == "repair" and r.source.lower() == "maintenance"]
        if len(into) >= 2 and out:
            return ok(
                f"instance {snap.instance_id!r} entered `maintenance` on `emergency` from "
                f"{len(into)} colours and left it on `repair` for `{out[0].target}`"
            )
    return no(
        "no instance has entered `maintenance` on `emergency` from two colours and left it "
        "on `repair`"
    )


@exercise(
    "03.2",
    "A final state",
    hint="StateMachine(..., final=[...]) names states that end an instance: they accept no "
    "event. Drive an instance into one, then send it one more event with strict=False.",
    notebook=NOTEBOOK,
)
def final_state(evidence: Evidence) -> Outcome:
    machine = evidence.machine
    if machine is None or evidence.instance is None:
        return no(
            "no instance was given",
            "Pass instance=... so the checker can see which states your machine calls final.",
        )
    if not machine.final:
        return no(f"machine {machine.name!r} declares no final state")
    history = evidence.history(evidence.instance.id)
    reached = next(
        (i for i, r in enumerate(history) if not r.ignored and r.target in machine.final), None
    )
    if reached is None:
        return no(f"instance {evidence.instance.id!r} never entered a final state")
    after = [r for r in history[reached + 1 :] if r.ignored]
    if not after:
        return no(
            f"instance {evidence.instance.id!r} is in final state "
            f"`{history[reached].target}`; no event was sent to it afterwards"
        )
    return ok(
        f"`{history[reached].target}` is final: `{after[0].event}` was recorded there as ignored"
    )


@exercise(
    "03.3",
    "Predict, then click the panel's buttons",
    hint="Follow the transition table one event at a time from the state the instance was "
    "in before the clicks; `emergency` goes to the same state from every colour.",
    notebook=NOTEBOOK,
)
def predict_then_click(evidence: Evidence) -> Outcome:
    if not isinstance(evidence.answer, str):
        return no("no prediction given: pass answer='<the state you expect>'")
    for snap in evidence.instances():
        fired = [r for r in evidence.history(snap.instance_id) if not r.ignored]
        if [r.event for r in fired[-len(CLICKS) :]] != CLICKS:
            continue
        end = fired[-1].target
        if evidence.answer.strip().lower() == end.lower():
            return ok(
                f"instance {snap.instance_id!r} went {fired[-len(CLICKS)].source} → "
                + " → ".join(r.target for r in fired[-len(CLICKS) :])
                + ", as you predicted"
            )
        return no(
            f"instance {snap.instance_id!r} went {fired[-len(CLICKS)].source} → "
            + " → ".join(r.target for r in fired[-len(CLICKS) :])
            + f": it ended in {end!r}, you predicted {evidence.answer!r}"
        )
    return no(
        "no instance's last events are " + ", ".join(CLICKS),
        "Click the buttons of instance.view() in this order (or send the events): "
        + ", ".join(CLICKS)
        + ".",
    )


@exercise(
    "03.4",
    "Send an event twice with one event id",
    hint="send(event, event_id=...) names one delivery: sending the same id again returns "
    "the first record and changes nothing.",
    notebook=NOTEBOOK,
)
def event_ids_deduplicate(evidence: Evidence) -> Outcome:
    answer = evidence.answer
    for snap in evidence.instances():
        ids = [r.event_id for r in evidence.history(snap.instance_id)]
        if "tick-1" in ids and "tick-2" in ids:
            recorded = ids.count("tick-1") + ids.count("tick-2")
            if answer == recorded:
                return ok(
                    f"instance {snap.instance_id!r} holds {recorded} records for three sends, "
                    "as you predicted"
                )
            return no(
                f"instance {snap.instance_id!r} has the events, but your prediction "
                f"{answer!r} is not the number of records they left"
            )
    return no("no instance has events with the ids 'tick-1' and 'tick-2'")
