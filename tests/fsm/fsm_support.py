"""Example machines and helpers shared by the state-machine tests."""

from __future__ import annotations

import asyncio
from enum import Enum, auto
from typing import Any

from agentnb.fsm import MachineInstance, StateMachine, TransitionRecord


class Light(Enum):
    RED = auto()
    GREEN = auto()
    YELLOW = auto()


def traffic_light() -> StateMachine:
    """The seed's traffic light: each timer tick moves to the next colour."""
    lights = StateMachine("traffic_light", states=Light, initial=Light.RED)
    lights.add_transition(Light.RED, "timer", Light.GREEN)
    lights.add_transition(Light.GREEN, "timer", Light.YELLOW)
    lights.add_transition(Light.YELLOW, "timer", Light.RED)
    return lights


class Sender:
    """Send events through ``send`` or through its async twin ``asend``."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(
        self,
        instance: MachineInstance,
        event: str,
        payload: Any = None,
        event_id: str | None = None,
    ) -> TransitionRecord:
        if self.mode == "sync":
            return instance.send(event, payload, event_id)
        return asyncio.run(instance.asend(event, payload, event_id))
