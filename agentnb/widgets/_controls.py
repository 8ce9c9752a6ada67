"""``Controls``: what a view's buttons do, on the kernel's event loop, never blocking it.

Step, Run and an approved run's continuation are tasks on the kernel's loop; Stop cancels
the task (the runtime records the run ``cancelled``). Run drives with
``astream(mode="custom")``, so what nodes emit (``ctx.emit``) reaches the panel while they
run; the node lit as running follows the emits and each committed step's next node. (A
Step, and a continuation by the panel's Worker, show a node's stream when its step is
saved.)
Approve and Reject go to the checkpointer in a worker thread, so the store — not the
widget — decides exactly once.

Two threads meet here: the kernel's (buttons, drive tasks) and the view's relay (which
reports the news and notices approvals). The fields under ``lock`` are what they share;
each change wakes the relay so the browser hears of it within one update window.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from typing import Any

from agentnb.errors import AgentnbError, DecisionError, RunBusy
from agentnb.graph.builder import END
from agentnb.graph.run import Run
from agentnb.graph.worker import Worker
from agentnb.store.records import Event, EventType, RunRecord, Status

__all__ = ["DECISIONS", "Controls", "News", "running_loop"]

DECISIONS = ("approved", "rejected")
_DRIVABLE = (Status.RUNNING, Status.APPROVED, Status.CANCELLED)
# Committed events after which the running node is another (or none).
_MOVES = frozenset(
    {
        EventType.STATE_UPDATE,
        EventType.INTERRUPTED,
        EventType.COMPLETED,
        EventType.FAILED,
        EventType.CANCELLED,
    }
)

News = tuple[str, str | None, str, str]
"""(busy, running node, error, notice) as the relay reads them."""


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running in this thread (a kernel's), or ``None``."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Controls:
    """Drives and decides one run for a view.

    Args:
        run: the run.
        wake: asks the view's relay for a refresh (thread-safe, cheap).
        continue_after_approval: continue runs approved by this view or elsewhere.
    """

    def __init__(
        self,
        run: Run,
        wake: Callable[[], None],
        *,
        continue_after_approval: bool,
    ) -> None:
        self.run = run
        self.wake = wake
        self.continue_after_approval = continue_after_approval
        self.loop = running_loop()
        """The kernel's loop: where drives run (learnt at the first message if need be)."""
        self.task: asyncio.Task[None] | None = None
        """The drive in progress (Step, Run or a continuation), if any."""
        self.lock = threading.Lock()
        self._busy = ""
        self._running: str | None = None
        self._error = ""
        self._notice = ""
        self._refused_at: int | None = None  # the log's last seq when a decision was refused
        self._local_approvals: set[int] = set()  # approvals committed by this process
        self._deciding = 0  # this view's decisions still in flight
        self._approved_here = False  # this view's Approve went through
        self.continued_seq = 0
        """The last approval judged for continuation (each is judged once)."""
        self._decisions: set[asyncio.Task[None]] = set()  # referenced until done
        self.decide_as: str | None = None
        """Set while the pause has an approver policy: decisions are made as this identity
        name only (the panel does not offer to decide as someone else)."""

    # -- read by the relay ---------------------------------------------------------------

    def news(self) -> News:
        with self.lock:
            return self._busy, self._running, self._error, self._notice

    def say(
        self, *, error: str | None = None, notice: str | None = None, refused_at: int | None = None
    ) -> None:
        """Tell the person something (an error stays until their next action).

        ``refused_at``: the error is a refused decision, made when the run's log ended at
        that seq; a decision committed after it (here or elsewhere) makes the error moot.
        """
        with self.lock:
            if error is not None:
                self._error, self._refused_at = error, refused_at
            if notice is not None:
                self._notice = notice
        self.wake()

    def decided_up_to(self, seq: int) -> None:
        """Relay thread: the last decision in the log is event ``seq``.

        A refusal made before that decision no longer describes the run (an empty
        approver name, then an approval from the panel or the CLI): it goes. A refusal made
        after it (a double click's second Approve) stays until the person's next action.
        """
        with self.lock:
            if self._refused_at is not None and seq > self._refused_at:
                self._error, self._refused_at = "", None

    def saw(self, event: Event) -> None:
        """Workflow listener, in whatever thread committed ``event``: keep it cheap."""
        if event.run_id != self.run.run_id:
            return
        if event.type == EventType.APPROVED:
            self._local_approvals.add(event.seq)
        elif self._busy == "run" and event.type in _MOVES:
            # The drive goes on to the node this step leads to: light it while it runs.
            after = event.payload.get("next") if event.type == EventType.STATE_UPDATE else None
            with self.lock:
                self._running = after if isinstance(after, str) and after != END else None
        self.wake()

    def maybe_continue(self, record: RunRecord, approved: int) -> None:
        """Relay thread: a new approval (event ``approved``) and nobody driving the run?"""
        if record.status != Status.APPROVED or not self.continue_after_approval:
            return
        with self.lock:
            # While our own Approve is in flight we cannot yet tell it from code's approve().
            if approved <= self.continued_seq or self._busy or self._deciding:
                return
            self.continued_seq = approved
        if record.lease_owner:  # another worker is on it already
            return
        if self.loop is None:  # made outside any event loop (a script): nothing to run on
            self.say(notice="Approved: continue the run with run.run().")
            return
        self.loop.call_soon_threadsafe(self._continue, approved)

    def _continue(self, approved: int) -> None:
        # Judged on the kernel's thread, not the relay's: a run.approve() made on this
        # thread has returned — and so told our listener it was local — before this runs.
        with self.lock:
            by_code_here = approved in self._local_approvals and not self._approved_here
            self._approved_here = False
        if not by_code_here:
            self.start("continue")

    # -- buttons (the kernel's thread, inside its event loop) ------------------------------

    def start(self, kind: str) -> None:
        """Start a drive: ``"step"``, ``"run"`` or ``"continue"`` (after an approval)."""
        if self.task is not None and not self.task.done():
            self.say(notice=f"Busy: a {self._busy or 'drive'} is in progress; Stop cancels it.")
            return
        status = self.run.status
        if kind != "continue" and status not in _DRIVABLE:
            hint = " — approve or reject it first" if status == Status.PENDING else ""
            self.say(notice=f"Nothing to {kind}: the run is {status}{hint}.")
            return
        with self.lock:
            self._busy = kind
            if kind != "continue":  # a person's new action; an automatic one keeps the news
                self._error, self._notice, self._refused_at = "", "", None
        self.task = asyncio.get_running_loop().create_task(self._drive(kind))

    def stop(self) -> None:
        """Cancel the drive in progress; the runtime records the run ``cancelled``."""
        if self.task is None or self.task.done():
            self.say(notice="Nothing to stop: the view is not driving the run.")
            return
        self.task.cancel()

    def _lit(self, node: str | None) -> None:
        with self.lock:
            self._running = node
        self.wake()

    async def _drive(self, kind: str) -> None:
        try:
            if kind == "step":
                self._lit(self.run.node)  # the step runs this node: light it while it runs
                result = await self.run.astep()
                if result.node is None:
                    self.say(notice=f"Nothing ran: {result}.")
            elif kind == "run":
                self._lit(self.run.node)
                # What nodes emit (ctx.emit) reaches the view through the workflow's
                # stream listeners, however the run is driven; here only the lights.
                async for event in self.run.astream():
                    if event.type == EventType.NODE_START:
                        self._lit(event.node)
            else:
                # After a decision the run is continued the way every worker does it: claimed
                # (so a Worker process that got there first keeps it), then driven.
                source = Worker(self.run.workflow, concurrency=1).acontinue(self.run.run_id)
                async for event in source:
                    if event.type == EventType.NODE_START:
                        self._lit(event.node)
        except asyncio.CancelledError:
            self.say(notice="Stopped: the run is recorded as cancelled; Run continues it.")
            raise
        except RunBusy as exc:
            self.say(notice=f"Another worker is driving this run: {exc}")
        except AgentnbError as exc:
            self.say(error=str(exc))
        except Exception as exc:  # a node's own exception type, if the runtime let one through
            self.say(error=f"{type(exc).__name__}: {exc}")
        finally:
            with self.lock:
                self._busy, self._running = "", None
            self.wake()

    def decide(self, content: dict[str, Any]) -> None:
        """Approve or reject as the browser asked, bound to the digest the view showed."""
        decision, by = content.get("decision"), content.get("by")
        comment, digest = content.get("comment"), content.get("digest")
        if decision not in DECISIONS or not isinstance(by, str):
            self.say(error=f"Refused: {decision!r} by {by!r} is not a decision this view sends.")
            return
        if self.decide_as is not None and by != self.decide_as:
            self.say(
                error=f"Refused: this pause has an approver policy, checked against who this "
                f"kernel runs as ({self.decide_as}); the panel decides as {self.decide_as} only."
            )
            return
        comment = comment if isinstance(comment, str) and comment else None
        digest = digest if isinstance(digest, str) and digest else None
        held = content.get("task")  # one of several tasks a superstep holds, if so
        held = held if isinstance(held, str) and held else None
        update = content.get("update")  # approve with edits: the keys to change
        if update is not None and not isinstance(update, dict):
            self.say(error="Refused: the edits are not a JSON object of keys; nothing changed.")
            return
        with self.lock:  # a person's new action: the last one's messages are answered
            self._error, self._notice, self._refused_at = "", "", None
        call = functools.partial(
            self.run.decide,
            decision,
            by=by,
            comment=comment,
            expected_digest=digest,
            task=held,
            update=update,
        )
        task = asyncio.get_running_loop().create_task(self._decide(decision, by, call))
        self._decisions.add(task)
        task.add_done_callback(self._decisions.discard)

    def respond(self, content: dict[str, Any]) -> None:
        """Answer a node's question as the browser asked (checked by ``run.respond``)."""
        by, comment, held = content.get("by"), content.get("comment"), content.get("task")
        if not isinstance(by, str) or "value" not in content:
            self.say(error=f"Refused: an answer by {by!r} is not a message this view sends.")
            return
        if self.decide_as is not None and by != self.decide_as:
            self.say(error=f"Refused: this panel decides as {self.decide_as} only.")
            return
        comment = comment if isinstance(comment, str) and comment else None
        held = held if isinstance(held, str) and held else None
        with self.lock:
            self._error, self._notice, self._refused_at = "", "", None
        call = functools.partial(
            self.run.respond, content["value"], by=by, comment=comment, task=held
        )
        task = asyncio.get_running_loop().create_task(self._decide("answered", by, call))
        self._decisions.add(task)
        task.add_done_callback(self._decisions.discard)

    def _attempt(self, call: Callable[[], Any]) -> tuple[DecisionError, int] | None:
        """Worker thread: decide; a refusal comes back with the log's last seq at that time."""
        try:
            call()
        except DecisionError as exc:
            return exc, self.run.workflow.checkpointer.get_run(self.run.run_id).seq
        return None

    async def _decide(self, decision: str, by: str, call: Callable[[], Any]) -> None:
        with self.lock:
            self._deciding += 1
        try:
            # The store's write may wait on another process's transaction: not on this loop.
            refusal = await self.run.workflow.checkpointer.offload(self._attempt, call)
        except AgentnbError as exc:  # not a refusal: the run or the store is gone
            self.say(error=str(exc))
        else:
            if refusal is not None:
                # Kept until the next action: a double click's refusal must stay visible.
                self.say(error=f"Refused: {refusal[0]}", refused_at=refusal[1])
            else:
                with self.lock:  # an answer approves the pause it answers
                    approved = decision in ("approved", "answered")
                    self._approved_here = self._approved_here or approved
                self.say(notice=f"{decision.capitalize()} by {by}.")
        finally:
            with self.lock:
                self._deciding -= 1
            self.wake()
