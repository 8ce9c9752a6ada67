"""``MachineControls``: what a machine panel's event buttons do, and what it hears of refusals.

A button sends its event with the instance's own ``asend``, as a task on the kernel's event
loop, bound to the history the person saw: if the instance moved on meanwhile (another
cell, another process), the click is refused instead of applied to a state nobody looked
at. The store still arbitrates concurrent writers (``seq``); this check is for the person.

Refusals leave no trace in the store (a strict instance raises
:class:`~agentnb.errors.TransitionNotAllowed` and records nothing), so the panel listens on
the instance itself (:meth:`~agentnb.fsm.MachineInstance.on_refused`): whatever sends the
event — a button, a cell, a callback — the panel shows the message.

Two threads meet here: the kernel's (buttons, sends, code) and the panel's relay (which
reads the news). The fields under ``lock`` are what they share.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentnb.errors import AgentnbError, TransitionNotAllowed
from agentnb.widgets._machine_panel import parse_payload

if TYPE_CHECKING:
    from agentnb.fsm import MachineInstance, TransitionRecord

__all__ = ["MachineControls", "tap_refusals"]

RefusalListener = Callable[[TransitionNotAllowed], None]


def tap_refusals(instance: MachineInstance, listener: RefusalListener) -> Callable[[], None]:
    """Call ``listener(error)`` whenever ``instance`` refuses an event; returns the remover.

    The instance itself reports refusals (:meth:`MachineInstance.on_refused`); the error
    still reaches whoever sent the event.
    """
    return instance.on_refused(listener)


News = tuple[str, str, str]
"""(busy event, error, notice) as the relay reads them."""


class MachineControls:
    """Sends a panel's events and keeps what the person should read.

    An error or notice lasts until the person's next click or until the instance moves
    past the point it was about (a newer transition makes it stale).

    Args:
        instance: the instance.
        wake: asks the panel's relay for a refresh (thread-safe, cheap).
    """

    def __init__(self, instance: MachineInstance, wake: Callable[[], None]) -> None:
        self.instance = instance
        self.wake = wake
        self.task: asyncio.Task[None] | None = None
        """The send in progress, if any."""
        self.lock = threading.Lock()
        self._busy = ""
        self._error = ""
        self._notice = ""
        self._about = -1  # the seq the error and notice are about
        self._untap: Callable[[], None] | None = tap_refusals(instance, self.refused)

    def close(self) -> None:
        """Stop listening to the instance's refusals (idempotent)."""
        untap, self._untap = self._untap, None
        if untap is not None:
            untap()

    # -- read by the relay ---------------------------------------------------------------

    def news(self, seq: int) -> News:
        """The news, forgetting what a transition newer than it (``seq``) made stale."""
        with self.lock:
            if seq > self._about:
                self._error = self._notice = ""
            return self._busy, self._error, self._notice

    def say(self, seq: int, *, error: str | None = None, notice: str | None = None) -> None:
        """Tell the person something about the instance as it stood after ``seq`` events."""
        with self.lock:
            if error is not None:
                self._error = error
            if notice is not None:
                self._notice = notice
            self._about = max(self._about, seq)
        self.wake()

    def _now(self) -> int:
        """How many events the instance has processed (what news is about)."""
        try:
            snap = self.instance.store.load(self.instance.id)
        except Exception:  # a closed store: the message matters more than its freshness
            return self._about
        return snap.seq if snap is not None else self._about

    def refused(self, error: TransitionNotAllowed) -> None:
        """Refusal listener, in whatever thread sent the event."""
        self.say(self._now(), error=f"Refused: {error}")

    # -- the button (the kernel's thread, inside its event loop) ---------------------------

    def send(self, content: dict[str, Any]) -> None:
        """Send the event the browser asked for, with its payload, if the view was current."""
        event, text, seen = content.get("event"), content.get("payload", ""), content.get("seq")
        machine = self.instance.machine
        if not isinstance(event, str) or event not in machine.events:
            self.say(self._now(), error=f"Refused: {machine.name} has no event {event!r}.")
            return
        try:
            payload = parse_payload(text if isinstance(text, str) else "")
        except ValueError as exc:
            self.say(self._now(), error=str(exc))
            return
        if self.task is not None and not self.task.done():
            self.say(self._now(), notice=f"Busy: {self._busy!r} is still being processed.")
            return
        with self.lock:
            self._busy, self._error, self._notice = event, "", ""
        seen = seen if isinstance(seen, int) and not isinstance(seen, bool) else None
        self.task = asyncio.get_running_loop().create_task(self._send(event, payload, seen))
        self.wake()

    async def _send(self, event: str, payload: Any, seen: int | None) -> None:
        instance = self.instance
        try:
            snap = instance.store.load(instance.id)
            if snap is not None and seen is not None and snap.seq != seen:
                self.say(
                    snap.seq,
                    error=f"Refused: the instance moved on since this view showed it (now in "
                    f"{snap.state} after {snap.seq} events): look again, then press "
                    f"{event!r} again.",
                )
                return
            record: TransitionRecord = await instance.asend(event, payload)
        except TransitionNotAllowed:
            pass  # reported by the refusal tap, as a refusal of code's send would be
        except AgentnbError as exc:
            self.say(self._now(), error=str(exc))
        except Exception as exc:  # an action's or hook's own error: nothing was saved
            self.say(self._now(), error=f"{event!r} failed: {type(exc).__name__}: {exc}")
        else:
            if not record.ignored:  # an ignored one is reported when the relay reads it
                self.say(record.seq, notice=str(record))
        finally:
            with self.lock:
                self._busy = ""
            self.wake()
