"""Drive a MachineView without a browser; the traffic light it is tested on."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from widget_support import Recorder

from agentnb.fsm import MachineInstance, StateMachine
from agentnb.widgets import MachineView


def night_mode(context: dict[str, Any], payload: Any) -> bool:
    return bool(context.get("night"))


def slow_enough(context: dict[str, Any], payload: Any) -> bool:
    return payload is None or payload.get("speed", 0) <= 50


def count_hurries(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    return {"hurried": context.get("hurried", 0) + 1}


def traffic_light() -> StateMachine:
    """RED -> GREEN -> YELLOW -> RED on ``timer``; two ways from GREEN to YELLOW (``timer``
    and a guarded ``hurry``, so parallel edges must light apart); ``night`` only when the
    context says so; ``off`` ends it.
    """
    light = StateMachine("traffic_light", ["RED", "GREEN", "YELLOW", "OFF"], "RED", ["OFF"])
    light.add_transition("RED", "timer", "GREEN")
    light.add_transition("GREEN", "timer", "YELLOW")
    light.add_transition("YELLOW", "timer", "RED")
    light.add_transition("GREEN", "hurry", "YELLOW", guard=slow_enough, action=count_hurries)
    light.add_transition("RED", "night", "YELLOW", guard=night_mode)
    light.add_transition("RED", "off", "OFF")
    return light


def light_document(*extra: str) -> dict[str, Any]:
    """The traffic light as a definition file; each extra state adds a way there and back."""
    transitions = [
        {"source": "RED", "event": "timer", "target": "GREEN"},
        {"source": "GREEN", "event": "timer", "target": "YELLOW"},
        {"source": "YELLOW", "event": "timer", "target": "RED"},
    ]
    for state in extra:
        transitions += [
            {"source": "RED", "event": "malfunction", "target": state},
            {"source": state, "event": "repair", "target": "RED"},
        ]
    return {
        "name": "traffic_light",
        "states": ["RED", "GREEN", "YELLOW", *extra],
        "initial": "RED",
        "transitions": transitions,
    }


def write(path: Path, content: dict[str, Any] | str) -> None:
    """Replace the file in one step, as editors do (write a sibling, rename it over)."""
    text = content if isinstance(content, str) else json.dumps(content, indent=2)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


class MachineFrontend(Recorder[MachineView]):
    """A MachineView and its recorder."""

    def __init__(self, instance: MachineInstance, **options: Any) -> None:
        super().__init__(MachineView(instance, **options))

    def press(self, event: str, payload: str = "", seq: int | None = None) -> None:
        """Press an event's button, as the view showing ``seq`` (the current one by default)."""
        self.click("send", event=event, payload=payload, seq=self.view.seq if seq is None else seq)

    def button(self, event: str) -> dict[str, Any]:
        (found,) = [b for b in self.view.buttons if b["event"] == event]
        return found

    def history(self, view: str = "v1") -> list[dict[str, Any]]:
        """The history as the browser holds it: a replay resets it, rows merge by ``seq``."""
        rows: dict[int, dict[str, Any]] = {}
        for message in self.customs("records", view):
            if message.get("reset"):
                rows = {}
            rows.update({r["seq"]: r for r in message["records"]})
        return [rows[seq] for seq in sorted(rows)]
