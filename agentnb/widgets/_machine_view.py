"""``MachineView``: one live panel to watch and drive a state-machine instance in Jupyter.

The panel owns no truth: it reads the instance's row and history from its store (the one
``instance.store`` names, which another process may share) and relays them to the browser
on the relay thread (:mod:`agentnb.widgets._relay`). Events go through the instance's own
``asend``, so the store decides, exactly as for code. Transitions committed in this process
wake the relay (a machine listener); those of other processes, and ignored events, are
announced by a PostgreSQL store (``LISTEN``/``NOTIFY``, :mod:`agentnb.store.watch`) or
found by polling the store's row — one read by primary key — while a view is open.

Given a :class:`~agentnb.fsm.MachineReloader`, the panel follows the file: when a new
definition is applied it draws the machine again (the only re-layout: a new definition is
a new drawing) and the buttons follow the new events; a refused reload shows its problems.

Messages (``model.send`` in the browser, handled by :meth:`MachineView._on_msg`)::

    {"kind": "hello", "view": id}      a view opened: send it the drawing and the history
    {"kind": "bye", "view": id}        a view closed
    {"kind": "send", "event": e, "payload": json_text, "seq": n}
                                       send e, unless the instance moved past n meanwhile
    {"kind": "viz_js"}                 send Graphviz-in-WebAssembly (once per page)

and to the browser: ``diagram`` (the drawing, again after a reload), ``records`` (history
rows, a whole replay with ``reset``), ``viz_js``; everything else is a synced trait.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import traitlets

from agentnb.errors import DefinitionError, InstanceNotFound
from agentnb.fsm import (
    MachineInstance,
    MachineReloader,
    Statechart,
    StateMachine,
    TransitionRecord,
)
from agentnb.render.extract import overlay_from_history
from agentnb.widgets._chart_panel import (
    chart_buttons,
    chart_overlay_payload,
    microstep_payloads,
    timer_rows,
)
from agentnb.widgets._controls import running_loop
from agentnb.widgets._drawing import chart_drawing_payload, machine_drawing_payload
from agentnb.widgets._live import STYLESHEET, LiveView, call_on, check_options, static_text
from agentnb.widgets._machine_controls import MachineControls
from agentnb.widgets._machine_panel import (
    event_buttons,
    machine_overlay_payload,
    record_row,
    reload_payload,
)
from agentnb.widgets._snapshot import machine_snapshot_bundle

__all__ = ["MachineView", "view_machine"]


class MachineView(LiveView):
    """A live panel of a machine instance: drawing, event buttons, history and context.

    Every event of the machine has a button: enabled when the event would move the
    instance now, disabled with the reason otherwise ("not allowed in RED", "guard
    night_mode refuses this context"). Guards are asked with the current context and no
    payload — pure calls, no action runs to find out; the JSON payload typed in the panel
    goes with the event when it is sent. A refused event, from a button or from code, is
    shown in the panel with its reason.

    Args:
        instance: the instance to show and drive.
        reloader: follow this definition file; the instance is tracked by it (see
            :meth:`~agentnb.fsm.MachineReloader.track`), so it must be able to follow the live
            definition.
        title: shown in the header; the machine's name and instance id by default.
        drawer: ``"dot"`` (SVG from the Graphviz program), ``"viz"`` (the browser lays out
            the DOT with Graphviz compiled to WebAssembly) or ``"auto"`` (``dot`` when
            installed).
        max_rate: at most this many updates per second reach the browser.
        poll_interval: seconds between store polls while a view is open (on PostgreSQL,
            only while the store's listening connection is down).

    Raises:
        IncompatibleMachine: ``reloader``'s definition cannot run this instance.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> from agentnb.widgets import MachineView
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> panel = MachineView(door.start("front"))  # the last line of a cell shows it
        >>> panel.state, [button["event"] for button in panel.buttons]
        ('closed', ['push'])
        >>> panel.close()
    """

    _esm = static_text("live.js", "machine_view.js")
    _css = STYLESHEET  # one for every panel: a page with both gets one set of rules

    instance_id = traitlets.Unicode("").tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)
    machine_name = traitlets.Unicode("").tag(sync=True)
    state = traitlets.Unicode("").tag(sync=True)
    seq = traitlets.Int(0).tag(sync=True)
    final = traitlets.Bool(False).tag(sync=True)
    generation = traitlets.Int(0).tag(sync=True)
    """How many definitions this panel has drawn (1, then +1 per applied reload)."""
    busy = traitlets.Unicode("").tag(sync=True)
    overlay = traitlets.Dict().tag(sync=True)
    buttons = traitlets.List(traitlets.Dict()).tag(sync=True)
    context = traitlets.Dict().tag(sync=True)
    changed = traitlets.List(traitlets.Unicode()).tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    reload = traitlets.Dict().tag(sync=True)
    """The latest reload attempt of ``reloader`` (``{}`` without one)."""
    microsteps = traitlets.List(traitlets.Dict()).tag(sync=True)
    """A statechart's microsteps for the last event sent in this process (microstep mode)."""
    timers = traitlets.List(traitlets.Dict()).tag(sync=True)
    """A statechart's pending timers, with the seconds left when they were read."""

    def __init__(
        self,
        instance: MachineInstance,
        *,
        reloader: MachineReloader | None = None,
        title: str | None = None,
        drawer: str = "auto",
        max_rate: float = 10.0,
        poll_interval: float = 0.5,
    ) -> None:
        check_options(drawer, max_rate)
        if reloader is not None and isinstance(instance.machine, Statechart):
            raise DefinitionError(
                "a MachineReloader follows flat StateMachine files, not statecharts",
                culprit=instance.id,
                fix="Open the view without reloader=, and load the chart again to change it",
            )
        if reloader is not None:
            reloader.track(instance)
        super().__init__(
            instance_id=instance.id,
            title=title or f"{instance.machine.name} · instance {instance.id[:12]}",
        )
        self.instance = instance
        self.reloader = reloader
        self.drawer = drawer
        self._store = instance.store
        # Read and written by the relay thread only (and by __init__ before it starts).
        self._machine: StateMachine | Statechart | None = None
        self._records: list[TransitionRecord] = []
        self._seq = -1
        self._reloads_seen = 0
        self._drawing: dict[str, Any] | None = None
        self._live = False  # live messages start once the relay runs; views replay before
        self._listening = threading.Lock()  # the relay follows machines; close() forgets them
        self._unsubscribe: Callable[[], None] | None = None
        self._closed = False
        self._start_relay(
            max_rate=max_rate,
            poll_interval=poll_interval,
            name=f"agentnb-mview-{instance.id[:8]}",
            store=self._store,
            key=instance.id,
        )
        self._controls = MachineControls(instance, self._relay.wake)
        self._loop = running_loop()  # the kernel's: where events from the buttons are sent
        self._refresh()  # the first state is there before anything is displayed
        self.on_msg(self._on_msg)
        self._live = True
        self._relay.start()

    def __repr__(self) -> str:
        return f"<MachineView of instance {self.instance_id[:12]!r}: {self.state} after {self.seq}>"

    # -- display -------------------------------------------------------------------------

    def _static_bundle(self, id_prefix: str, note: str) -> dict[str, str]:
        return machine_snapshot_bundle(self.instance, id_prefix=id_prefix, note=note)

    def _detach(self) -> None:
        controls = getattr(self, "_controls", None)
        if controls is not None:
            controls.close()
        lock = getattr(self, "_listening", None)
        if lock is not None:
            with lock:
                self._closed = True  # a refresh still running must not listen again
                self._forget()

    def _forget(self) -> None:
        if self._unsubscribe is not None:
            with contextlib.suppress(ValueError):  # already unsubscribed
                self._unsubscribe()
            self._unsubscribe = None

    def _relay_failed(self, exc: BaseException) -> None:
        text = f"The view could not read the instance: {type(exc).__name__}: {exc}"
        self._controls.say(self._seq, error=text)
        self.error = text  # the refresh that would have shown it is the one that failed

    # -- the relay thread: read what changed, send it --------------------------------------

    def _saw(self, instance: MachineInstance, record: TransitionRecord) -> None:
        """Machine listener, in whatever thread committed ``record``: keep it cheap."""
        if instance.id == self.instance_id:
            self._relay.wake()

    def _follow(self, machine: StateMachine | Statechart) -> None:
        """Listen to ``machine``, the instance's definition from now on."""
        with self._listening:
            self._forget()
            if not self._closed:
                self._unsubscribe = machine.subscribe(self._saw)
        self._machine = machine
        self._drawing = None
        self.generation += 1

    def _refresh(self) -> None:
        snap = self._store.load(self.instance_id)
        if snap is None:
            raise InstanceNotFound(self.instance_id)
        machine = self.instance.machine
        redraw = machine is not self._machine
        if redraw:
            self._follow(machine)
        moved = snap.seq != self._seq
        new: list[TransitionRecord] = []
        if moved:
            # Only when the row says something happened: the history is the long read. Only
            # the records the row accounts for: one committed since waits for the next
            # refresh (its commit woke the relay), so the log never runs ahead of the state.
            history = self._store.history(self.instance_id)
            self._records = [r for r in history if r.seq <= snap.seq]
            new = [r for r in self._records if r.seq > self._seq]
            self._seq = snap.seq
            if self._live and new and new[-1].ignored:
                self._controls.say(new[-1].seq, error=f"Refused and recorded: {new[-1]}")
        reload = self._reload_news()
        busy, error, notice = self._controls.news(snap.seq)
        # One message to the browser; for a reader on another thread (a test), the state,
        # the seq and busy come last, so whoever sees them sees the rest of the step.
        with self.hold_sync():
            self.machine_name = machine.name
            if isinstance(machine, Statechart):
                self._refresh_chart(moved or redraw)
            elif moved or redraw:
                assert isinstance(machine, StateMachine)
                self.final = snap.state in machine.final
                overlay = overlay_from_history(self._records, machine, current=snap.state)
                self.overlay = machine_overlay_payload(overlay)
                self.buttons = event_buttons(machine, snap.state, snap.context)
                self.context = snap.context
                last = next((r for r in reversed(self._records) if not r.ignored), None)
                self.changed = list(last.delta) if last is not None else []
            if reload is not None:
                self.reload = reload
            self.error = error
            self.notice = notice
            self.state = snap.state
            self.seq = snap.seq
            self.busy = busy
        if redraw and self._live and self._views:
            self._post(self._diagram())  # every open view: the one re-layout, by design
        if new and self._live:
            self._post({"kind": "records", "records": [record_row(r) for r in new]})

    def _refresh_chart(self, moved: bool) -> None:
        """The statechart parts: configuration lit, buttons, microsteps, timers."""
        instance = self.instance
        self.final = instance.is_final
        self.timers = timer_rows(instance)
        if moved:
            self.overlay = chart_overlay_payload(instance)
            self.buttons = chart_buttons(instance)
            self.context = instance.context
            last = next((r for r in reversed(self._records) if not r.ignored), None)
            self.changed = list(last.delta) if last is not None else []
            self.microsteps = microstep_payloads(instance.chart, instance.microsteps)

    def _reload_news(self) -> dict[str, Any] | None:
        if self.reloader is None:
            return None
        results = self.reloader.results
        if len(results) == self._reloads_seen:
            return None
        self._reloads_seen = len(results)
        return reload_payload(results[-1])

    def _diagram(self) -> dict[str, Any]:
        if self._drawing is None:
            assert self._machine is not None  # set by the first refresh
            if isinstance(self._machine, Statechart):
                drawing = chart_drawing_payload(self._machine, self.drawer, self.model_id)
            else:
                drawing = machine_drawing_payload(self._machine, self.drawer, self.model_id)
            self._drawing = {**drawing, "generation": self.generation}
        return self._drawing

    def _replay(self, view_id: str) -> None:
        """Send one view the drawing and the whole history."""
        self._post({**self._diagram(), "view": view_id})
        self._post_rows(view_id, "records", [record_row(r) for r in self._records])

    # -- from the browser (the kernel's thread, inside its event loop) ---------------------

    def _on_msg(self, _widget: Any, content: Any, buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("kind")
        if self._page_msg(kind, str(content.get("view", ""))):
            return
        if kind == "send":
            if self._loop is None:  # made outside any loop: the first message's will do
                self._loop = running_loop()
            call_on(self._loop, lambda: self._controls.send(content))


def view_machine(instance: MachineInstance, **options: Any) -> MachineView:
    """A live :class:`MachineView` of ``instance``; ``options`` as for :class:`MachineView`.

    Example:
        >>> from agentnb.fsm import StateMachine
        >>> from agentnb.widgets import view_machine
        >>> door = StateMachine("door", ["closed", "open"], initial="closed", final=["open"])
        >>> _ = door.add_transition("closed", "push", "open")
        >>> panel = view_machine(door.start("front"))  # what instance.view() calls
        >>> panel.machine_name, panel.instance_id, panel.state
        ('door', 'front', 'closed')
        >>> panel.close()
    """
    return MachineView(instance, **options)
