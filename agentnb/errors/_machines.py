"""Errors of state-machine instances: a refused event, an unknown instance."""

from __future__ import annotations

from collections.abc import Sequence

from agentnb.errors._root import AgentnbError


class TransitionNotAllowed(AgentnbError):
    """A state machine received an event it does not accept in its current state.

    Attributes:
        event: what was sent.
        state: where the instance stood.
        allowed: the events the state declares.
        guards: when the event is declared but every guard refused it, their names.

    Example:
        >>> from agentnb import TransitionNotAllowed
        >>> from agentnb.fsm import StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> instance = door.start("front")
        >>> try:
        ...     instance.send("pull")
        ... except TransitionNotAllowed as error:
        ...     print(error.state, error.event, error.allowed)
        closed pull ['push']
    """

    def __init__(
        self, event: str, state: str, allowed: Sequence[str], *, guards: Sequence[str] = ()
    ) -> None:
        self.event = event
        self.state = state
        self.allowed = list(allowed)
        self.guards = list(guards)
        allowed_text = ", ".join(repr(a) for a in self.allowed) or "none (final state)"
        if self.guards:
            message = (
                f"event {event!r} was refused in state {state!r}: it has transitions here, "
                f"but none of their guards ({', '.join(self.guards)}) passed with this "
                f"context and payload. Declared now: {allowed_text}."
            )
        else:
            message = f"event {event!r} is not allowed in state {state!r}. Allowed now: " + (
                f"{allowed_text}."
            )
        super().__init__(message)


class InstanceNotFound(AgentnbError):
    """No state-machine instance with this id exists in the store.

    Example:
        >>> from agentnb import InstanceNotFound
        >>> from agentnb.fsm import MemoryMachineStore, StateMachine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> try:
        ...     door.resume("nobody", store=MemoryMachineStore())
        ... except InstanceNotFound as error:
        ...     print(error.instance_id)
        nobody
    """

    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        super().__init__(
            f"no machine instance {instance_id!r} in this store. Start one with "
            "machine.start(instance_id=..., store=...)."
        )
