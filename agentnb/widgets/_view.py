"""``RunView``: one live panel to watch, step and approve a run inside Jupyter.

The Python side owns no truth: it reads the run's row and events from the checkpointer and
relays them to the browser (see :mod:`agentnb.widgets._relay`), and it turns buttons into
runtime calls — driving tasks scheduled on the kernel's event loop (never blocking it) and
decisions recorded by the checkpointer exactly once. A decision made elsewhere (the CLI,
another kernel) reaches the view through the store, and this kernel continues the run.

Messages (``model.send`` in the browser, handled by :meth:`RunView._on_msg`)::

    {"kind": "hello", "view": id}      a view opened: replay the drawing and the whole log
    {"kind": "bye", "view": id}        a view closed
    {"kind": "step" | "run" | "stop"}  drive the run, or cancel the drive in progress
    {"kind": "decide", "decision": "approved" | "rejected", "by", "comment", "digest"}
    {"kind": "respond", "value", "by", "comment", "task"}   (a node's question answered)
    {"kind": "history", "view": id, "step": k}   state and overlay after k nodes
    {"kind": "rows", "view": id, "filter": type, "start": i, "count": n, "req": r}
                                       rows i .. i+n of the log (filtered), read from the store
    {"kind": "collapse", "view": id, "collapsed": [cluster id, ...]}
                                       redraw with those subgraph clusters folded to one node
    {"kind": "viz_js"}                 send Graphviz-in-WebAssembly (once per page)

The log is never sent whole: a view hears the totals and the newest rows (``events``), and
asks for the rows it scrolls to (``rows``); the kernel holds counts, bookmarks and a window
of recent events (:mod:`agentnb.widgets._log`). What nodes emit while this view drives the
run arrives as ``tokens`` (:mod:`agentnb.widgets._tokens`).
"""

from __future__ import annotations

import bisect
import contextlib
import getpass
from collections import deque
from collections.abc import Sequence
from typing import Any

import traitlets

from agentnb.errors import StoreError
from agentnb.graph.run import Run
from agentnb.graph.streams import Emitted
from agentnb.render.model import Diagram
from agentnb.store.decisions import approver_name
from agentnb.store.history import LazyCheckpoint
from agentnb.store.records import Checkpoint, Event, EventType, Status
from agentnb.widgets._controls import Controls, running_loop
from agentnb.widgets._drawing import drawing_payload
from agentnb.widgets._events import (
    decided_payload,
    frontier_text,
    overlay_payload,
    pending_payload,
    run_error_text,
)
from agentnb.widgets._inside import Inside
from agentnb.widgets._live import STYLESHEET, LiveView, call_on, check_options, static_text
from agentnb.widgets._log import PAGE, RunLog
from agentnb.widgets._snapshot import snapshot_bundle
from agentnb.widgets._tokens import TokenRows

__all__ = ["RunView", "view"]

_DECISION_EVENTS = frozenset({EventType.APPROVED, EventType.REJECTED})
_PAUSE_EVENTS = _DECISION_EVENTS | {EventType.INTERRUPTED}  # they change `decided`
# A task's result (or its end) is committed: what it streamed is complete.
_DRAWINGS = 8  # drawings kept, one per set of folded clusters a view asked for
_TASK_ENDS = frozenset({EventType.STATE_UPDATE, EventType.FAILED, EventType.INTERRUPTED})


def _default_approver() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers: the field starts empty
        return ""


class RunView(LiveView):
    """A live view of a run: drawing, event log, state, controls and the approval form.

    Args:
        run: the run to show (any status; a finished run shows its whole history).
        title: shown in the header; the workflow's name and run id by default.
        drawer: ``"dot"`` (SVG from the Graphviz program), ``"viz"`` (the browser lays
            out the DOT with Graphviz compiled to WebAssembly, shipped in the package) or
            ``"auto"`` (``dot`` when installed).
        by: the name pre-filled in the approver field (the login name by default), as
            ``run.approve(by=...)`` takes it; ``approver=`` is its deprecated spelling (it
            warns). When the paused interrupt has an approver policy, the panel decides as
            the identity this kernel vouches for (``workflow.identity()``) and the field
            is not editable: a policy is never checked against a typed name.
        continue_after_approval: once approved — here, from the CLI or from another
            kernel — this kernel runs the run on to its next pause or its end. Approvals
            made by code in this kernel (``run.approve()``) are left to that code.
        max_rate: at most this many updates per second reach the browser.
        poll_interval: seconds between store polls while a view is open. On PostgreSQL
            the store announces every commit to the run (``LISTEN``/``NOTIFY``) and the
            panel polls only while its listening connection is down.
        diagram: draw this instead of the workflow's own diagram — a run mirrored from
            another runtime (``agentnb.interop.langgraph``) draws that runtime's graph.
            Its node ids are the names the run's events use.

    Example:
        >>> from agentnb import StateGraph
        >>> from agentnb.widgets import RunView
        >>> graph = StateGraph("pay").add_node("pay", lambda state: {}).set_entry_point("pay")
        >>> run = graph.add_interrupt_before("pay").compile().start({}, run_id="r1")
        >>> _ = run.step()
        >>> panel = RunView(run)  # the last line of a cell shows it; Approve decides
        >>> panel.status, panel.node, panel.pending["when"]
        ('pending', 'pay', 'before')
        >>> panel.close()
    """

    _esm = static_text("live.js", "run_log.js", "run_view.js")
    _css = STYLESHEET  # one for every panel: a page with both gets one set of rules

    run_id = traitlets.Unicode("").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    node = traitlets.Unicode("").tag(sync=True)
    frontier = traitlets.Unicode("").tag(sync=True)
    """Every task the next superstep runs, named (``papers + web``, ``write ×3 (Send)``)."""
    step = traitlets.Int(0).tag(sync=True)
    max_steps = traitlets.Int(0).tag(sync=True)
    busy = traitlets.Unicode("").tag(sync=True)
    overlay = traitlets.Dict().tag(sync=True)
    state = traitlets.Dict().tag(sync=True)
    changed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    pending = traitlets.Dict().tag(sync=True)
    decided = traitlets.Dict().tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    approver = traitlets.Unicode("").tag(sync=True)
    identity = traitlets.Unicode("").tag(sync=True)
    """Who this kernel vouches for, e.g. ``ada (jupyterhub)``: the one a policy checks."""

    def __init__(
        self,
        run: Run,
        *,
        title: str | None = None,
        drawer: str = "auto",
        by: str | None = None,
        continue_after_approval: bool = True,
        max_rate: float = 10.0,
        poll_interval: float = 0.5,
        approver: str | None = None,
        diagram: Diagram | None = None,
    ) -> None:
        check_options(drawer, max_rate)
        self._diagram = diagram
        if approver is not None:
            by = approver_name(by, approver, "view")
        me = run.workflow.identity()
        super().__init__(
            run_id=run.run_id,
            title=title or f"{run.workflow.name} · run {run.run_id[:12]}",
            approver=_default_approver() if by is None else by,
            identity=str(me),
        )
        self._me = me
        self._policy = run.policy  # stored when the run started; it never changes
        self.run = run
        self.drawer = drawer
        self._store = run.workflow.checkpointer
        # Read and written by the relay thread only (and by __init__ before it starts).
        self._log = RunLog(self._store, run.run_id, run.workflow)
        self._decided_seq = 0  # the last approved/rejected event in the log
        self._approved_seq = 0  # the last approved event
        self._step = -1
        self._overlay_running: str | None = None
        self._drawings: dict[frozenset[str], dict[str, Any]] = {}  # by the clusters folded
        self._live = False  # live batches start once the relay runs; views replay before
        # What each view asked for last (kernel thread writes, relay thread serves): a view
        # scrolling or dragging fast is answered its latest request, not every one.
        self._wanted_rows: dict[str, dict[str, Any]] = {}
        self._wanted_step: dict[str, int] = {}
        self._tokens = TokenRows()
        self._inside = Inside(run)
        self._overlay: dict[str, Any] = {}
        self._start_relay(
            max_rate=max_rate,
            poll_interval=poll_interval,
            name=f"agentnb-view-{run.run_id[:8]}",
            store=self._store,
            key=run.run_id,
        )
        self._controls = Controls(
            run,
            self._relay.wake,
            continue_after_approval=continue_after_approval,
        )
        self.events_sent = 0
        """Log rows sent to the browser in live batches (replays not counted)."""
        self._refresh()  # the first state is there before anything is displayed
        self._unsubscribe = run.workflow.subscribe(self._controls.saw)
        # What the run's nodes emit, whoever drives it in this kernel: this view's buttons,
        # a cell's run.run(), a continuation after a decision, an in-process Worker.
        self._unsubscribe_streams = run.workflow.subscribe(self._emitted, mode="custom")
        self.on_msg(self._on_msg)
        self._live = True
        self._relay.start()

    def __repr__(self) -> str:
        return f"<RunView of run {self.run_id[:12]}: {self.status} at {self.node!r}>"

    # -- display -------------------------------------------------------------------------

    def _static_bundle(self, id_prefix: str, note: str) -> dict[str, str]:
        return snapshot_bundle(self.run, id_prefix=id_prefix, note=note, drawn=self._diagram)

    def _emitted(self, item: Emitted) -> None:
        """An item a node of this workflow emitted (in the node's thread): ours, if its run."""
        if item.run_id == self.run_id:
            self._tokens.add(item)
            self._relay.wake()

    def _detach(self) -> None:
        for name in ("_unsubscribe", "_unsubscribe_streams"):
            unsubscribe = getattr(self, name, None)  # None if __init__ failed early
            if unsubscribe is not None:
                with contextlib.suppress(ValueError):  # already unsubscribed
                    unsubscribe()

    def _relay_failed(self, exc: BaseException) -> None:
        self._controls.say(error=f"The view could not read the run: {type(exc).__name__}: {exc}")

    # -- the relay thread: read what changed, send it --------------------------------------

    @property
    def _seq(self) -> int:
        """The last event this view has read (and counted) from the store."""
        return self._log.seq

    def _refresh(self) -> None:
        record = self._store.get_run(self.run_id)
        # The row first, then only the events it accounts for. One committed between the two
        # reads (a Step's, here or in another process) waits for the next refresh — its
        # commit woke the relay — so the page never shows a log ahead of the status, the
        # approval form and the state that go with it (and Step enabled on a paused run).
        # Read in pages and counted, never held: only the newest rows go to the browser.
        log = self._log
        before = log.total
        newest: deque[Event] = deque(maxlen=PAGE)
        pauses = False
        for page in log.read(record.seq):
            newest.extend(page)
            for e in page:
                if e.type in _PAUSE_EVENTS:
                    pauses = True
                if e.type in _DECISION_EVENTS:
                    self._decided_seq = e.seq
                if e.type == EventType.APPROVED:
                    self._approved_seq = e.seq
                if e.type in _TASK_ENDS:
                    self._tokens.finish(str(e.payload.get("task") or e.node))
        fresh = log.total - before
        # Every time, not only when a decision arrives: a refusal may be reported just after.
        self._controls.decided_up_to(self._decided_seq)
        busy, running, error, notice = self._controls.news()
        if record.lease_owner is None:  # nobody drives it (its lease is given back on a
            self._tokens.finish()  # pause or at the end): nothing streams on
        # The state changes only when a step commits: read it then, not on every batch.
        changed_step = record.step != self._step
        saved = self._store.checkpoint(self.run_id, record.step) if changed_step else None
        state = saved.state if saved is not None else None
        self._step = record.step
        moved = bool(fresh) or running != self._overlay_running
        # The browser gets these in one message. Another thread (a test) reads them one by
        # one as they are set, so the status and busy, which say what the rest means, come
        # last: whoever sees the new status sees the form, state and log that go with it.
        with self.hold_sync():
            self.node = record.node
            self.step = record.step
            self.max_steps = record.max_steps
            if moved:
                self._overlay = overlay_payload(log.fold.overlay(), running)
                self._overlay_running = running
            if moved or self._inside.subgraphs:
                # A child run moves without its parent's log: looked at on every refresh.
                inside = self._inside.payload(self._overlay) if self._inside.subgraphs else {}
                shown = {**self._overlay, "inside": inside}
                if shown != self.overlay:
                    self.overlay = shown
            if saved is not None:
                self.frontier = frontier_text(record.node, saved.tasks)
            if state is not None:
                self.state = state
                self.changed = list(log.last_delta)
            self.pending = (
                self._with_policy(pending_payload(log.recent, record.pending_digest))
                if record.status == Status.PENDING
                else {}
            )
            if pauses or not self._live:
                self.decided = decided_payload(log.recent)
            self.error = error or run_error_text(record)
            self.notice = notice
            self.status = str(record.status)
            self.busy = busy
        if fresh and self._live:
            self._post({"kind": "events", **self._log_news(newest)})
            self.events_sent += len(newest)
        tokens = self._tokens.take()
        if tokens and self._live:
            self._post({"kind": "tokens", "rows": tokens, "unshown": self._tokens.unshown})
        self._controls.maybe_continue(record, self._approved_seq)

    def _log_news(self, newest: Sequence[Event]) -> dict[str, Any]:
        """The totals of the log and its newest rows, each with its index ``i``."""
        log = self._log
        return {
            "events": log.rows(newest, log.total - len(newest)),
            "total": log.total,
            "counts": dict(log.counts),
        }

    def _with_policy(self, pending: dict[str, Any]) -> dict[str, Any]:
        """Say who may decide this pause; when anyone may not, decide as ``identity``."""
        applying = self._policy.applying(pending.get("node") or "", pending.get("after"))
        self._controls.decide_as = self._me.name if applying else None
        if applying:
            pending["policy"] = "; ".join(p.describe() for p in applying.values())
            self.approver = self._me.name
        return pending

    def _replay(self, view_id: str) -> None:
        """Send one view the drawing, the log's totals and newest rows, and live streams."""
        self._post({**self._drawing(frozenset()), "view": view_id})
        newest = list(self._log.recent)[-PAGE:]
        self._post({"kind": "events", "view": view_id, "reset": True, **self._log_news(newest)})
        rows = self._tokens.snapshot()
        self._post({"kind": "tokens", "view": view_id, "reset": True, "rows": rows})

    def _drawing(self, collapsed: frozenset[str]) -> dict[str, Any]:
        """The drawing with ``collapsed`` folded; each laid out once (a few kept)."""
        drawing = self._drawings.get(collapsed)
        if drawing is None:
            if len(self._drawings) >= _DRAWINGS:
                del self._drawings[next(iter(self._drawings))]
            drawing = drawing_payload(
                self.run.workflow, self.drawer, self.model_id, collapsed, self._diagram
            )
            self._drawings[collapsed] = drawing
        return drawing

    def _serve_rows(self, view_id: str) -> None:
        """Relay thread: the rows the view asked for last (read from the store)."""
        asked = self._wanted_rows.pop(view_id, None)
        if asked is None:
            return  # served already, by the job of a later request
        kind, start, count = asked["filter"], asked["start"], asked["count"]
        rows = self._log.page(kind, start, count)
        self._post(
            {
                "kind": "rows",
                "view": view_id,
                "req": asked["req"],
                "filter": kind,
                "start": start,
                "rows": rows,
                "total": self._log.size(kind),
            }
        )

    def _history(self, view_id: str) -> None:
        """Relay thread: the state (one read) and overlay after the step the view asked for."""
        step = self._wanted_step.pop(view_id, None)
        if step is None:
            return
        try:  # one read: what run.history()[step].state reads, without listing the run
            item: Checkpoint | LazyCheckpoint = self._store.checkpoint(self.run_id, step)
        except StoreError:  # no checkpoint of its own: the one before it, from the listing
            try:
                history = self.run.history()
            except StoreError as exc:  # closed (a notebook's last cell closes its store)
                self.error = f"step {step} cannot be shown: {exc}"
                return
            at = bisect.bisect_right(history.steps, step) - 1
            if at < 0:
                return
            item = history[at]
        fold, delta = self._log.overlay_at(item.step)
        self._post(
            {
                "kind": "history",
                "view": view_id,
                "step": step,
                "node": item.node,
                "next": frontier_text(item.node, item.tasks),
                "state": item.state,
                "changed": list(delta),
                "overlay": overlay_payload(fold.overlay()),
            }
        )

    # -- from the browser (the kernel's thread, inside its event loop) ---------------------

    def _on_msg(self, _widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("kind")
        view_id = str(content.get("view", ""))
        controls = self._controls
        if controls.loop is None:
            controls.loop = running_loop()
        if self._page_msg(kind, view_id):
            return
        if kind in ("step", "run"):
            call_on(controls.loop, lambda: controls.start(kind))
        elif kind == "stop":
            call_on(controls.loop, controls.stop)
        elif kind == "decide":
            call_on(controls.loop, lambda: controls.decide(content))
        elif kind == "respond":
            call_on(controls.loop, lambda: controls.respond(content))
        elif kind == "history":
            step = content.get("step")
            if isinstance(step, int) and 0 <= step <= self.step:
                self._wanted_step[view_id] = step
                self._relay.submit(lambda: self._history(view_id))
        elif kind == "collapse":
            folded = content.get("collapsed")
            if isinstance(folded, list) and all(isinstance(c, str) for c in folded):
                chosen = frozenset(folded)
                self._relay.submit(lambda: self._post({**self._drawing(chosen), "view": view_id}))
        elif kind == "rows":
            asked = _rows_request(content)
            if asked is not None:
                self._wanted_rows[view_id] = asked
                self._relay.submit(lambda: self._serve_rows(view_id))


def _rows_request(content: dict[str, Any]) -> dict[str, Any] | None:
    """A ``rows`` message's fields, or ``None`` if it is not one this view sends."""
    kind, start, count, req = (content.get(k) for k in ("filter", "start", "count", "req"))
    if not isinstance(kind, str) or not all(isinstance(v, int) for v in (start, count, req)):
        return None
    return {"filter": kind, "start": start, "count": count, "req": req}


def view(run: Run, **options: Any) -> RunView:
    """A live :class:`RunView` of ``run``; ``options`` as for :class:`RunView`.

    Example:
        >>> from agentnb import StateGraph
        >>> from agentnb.widgets import view
        >>> graph = StateGraph("one").add_node("a", lambda state: {}).set_entry_point("a")
        >>> panel = view(graph.compile().start({}, run_id="r1"))  # what run.view() calls
        >>> panel.run_id, panel.status, panel.max_steps
        ('r1', 'running', 25)
        >>> panel.close()
    """
    return RunView(run, **options)
