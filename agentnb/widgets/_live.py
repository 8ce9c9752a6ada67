"""``LiveView``: what every live panel shares — a relay, open browser views, the drawing's
Graphviz-in-WebAssembly on demand, and the static snapshot beside the widget.

A live panel (:class:`~agentnb.widgets.RunView`, :class:`~agentnb.widgets.MachineView`)
reads the truth from a store on its relay thread (:mod:`agentnb.widgets._relay`) and sends
it to the browser; this base class holds the parts of that which do not depend on what is
shown. Messages every panel understands (``model.send`` in the browser)::

    {"kind": "hello", "view": id}   a view opened: poll while any is open, replay to it
    {"kind": "bye", "view": id}     a view closed
    {"kind": "viz_js"}              send Graphviz-in-WebAssembly (once per page)

The browser halves are plain ES modules and stylesheets in ``static/``: ``live.js`` and
``live.css`` (the shared helpers: text-only DOM building, SVG scrubbing, the drawing, the
tree) are put in front of each panel's own file by :func:`static_text`, since an anywidget
module is sent as one text and cannot import its neighbours.
"""

from __future__ import annotations

import asyncio
import html
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from agentnb.errors import AgentnbError
from agentnb.render.svg import SVG_ALLOW
from agentnb.store.watch import UNWATCHED, Watch, watch
from agentnb.widgets._drawing import DRAWERS, viz_js_bytes
from agentnb.widgets._relay import Relay
from agentnb.widgets._snapshot import CLOSED_NOTE, NOTE

__all__ = [
    "REPLAY_CHUNK",
    "STATIC",
    "STYLESHEET",
    "LiveView",
    "call_on",
    "check_options",
    "static_text",
]

STATIC = Path(__file__).parent / "static"
REPLAY_CHUNK = 2000
"""Rows per message when a view replays a whole log (a run's events, an instance's history)."""


def static_text(*names: str) -> str:
    """The files ``static/<name>`` joined into one text (an ES module or a stylesheet)."""
    return "\n".join((STATIC / name).read_text(encoding="utf-8") for name in names)


STYLESHEET = static_text("live.css", "run_view.css", "machine_view.css")
"""Every panel's ``_css``: one text, so a MachineView's copy cannot restyle a RunView's nodes
(anywidget adds one ``<style>`` per widget class; identical texts keep the rules' order)."""


def call_on(loop: asyncio.AbstractEventLoop | None, handle: Callable[[], None]) -> None:
    """Run ``handle`` on ``loop`` — the kernel's, where the panel was made — now if already on it.

    JupyterLab 4.6 sends widget messages over a kernel subshell, and ipykernel 7 then calls
    a panel's message handler on that subshell's thread, inside that thread's own event
    loop. A Step, Run or event started there would run the person's nodes and actions on
    that thread, beside the cells running on the main one, and drives started from two
    loops could race each other. So what a button starts hops to the panel's loop.
    """
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    if loop is None or loop is here or loop.is_closed():
        handle()
    else:
        loop.call_soon_threadsafe(handle)


def check_options(drawer: str, max_rate: float) -> None:
    """Refuse a drawer or an update rate no panel can use.

    Raises:
        ValueError: with the values that would work.
    """
    if drawer not in DRAWERS:
        raise ValueError(f"drawer={drawer!r}: use one of {', '.join(DRAWERS)}")
    if max_rate <= 0:
        raise ValueError(f"max_rate={max_rate!r}: updates per second must be positive")


class LiveView(anywidget.AnyWidget):
    """The shared half of a live panel; subclasses show something particular.

    A subclass calls :meth:`_start_relay` at the end of its ``__init__`` and provides
    :meth:`_refresh` (relay thread: read what changed, send it), :meth:`_replay` (relay
    thread: everything one new browser view needs), :meth:`_relay_failed`,
    :meth:`_static_bundle` and, if it listens to anything, :meth:`_detach`.
    """

    _relay: Relay
    _svg_allow = traitlets.Dict(SVG_ALLOW).tag(sync=True)
    """The SVG allow-list the browser scrubs drawings with (the one Python checks with)."""

    _watch: Watch = UNWATCHED

    def _start_relay(
        self, *, max_rate: float, poll_interval: float, name: str, store: object, key: str
    ) -> None:
        """Make the relay, woken by ``store``'s announcements of ``key`` if it makes any."""
        self._views: set[str] = set()  # browser views open (kernel thread)
        self._snapshots: list[str] = []  # display ids of the static snapshots shown
        self.messages_sent = 0
        """Custom messages sent to the browser (for tests and benchmarks)."""
        self._relay = Relay(
            self._refresh,
            self._relay_failed,
            min_interval=1.0 / max_rate,
            poll_interval=poll_interval,
            name=name,
        )
        # For the panel's lifetime, browser or not: its traits follow another process's
        # commits as they follow this one's (a store that announces nothing: UNWATCHED).
        self._watch = watch(store, key, self._relay.wake)
        self._relay.announced = lambda: self._watch.live

    # -- what subclasses provide ---------------------------------------------------------

    def _refresh(self) -> None:
        raise NotImplementedError

    def _replay(self, view_id: str) -> None:
        raise NotImplementedError

    def _relay_failed(self, exc: BaseException) -> None:
        raise NotImplementedError

    def _static_bundle(self, id_prefix: str, note: str) -> dict[str, str]:
        raise NotImplementedError

    def _detach(self) -> None:
        """Forget the listeners the panel registered (:meth:`close`; may run twice)."""

    # -- display -------------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        from IPython.display import display

        show: Callable[..., None] = display  # untyped in IPython
        bundle = self._repr_mimebundle_()
        if bundle is not None:
            data, metadata = bundle
            show(data, metadata=metadata, raw=True)
        # The sibling a reader without a kernel sees (agentnb.widgets._snapshot), under a
        # display id so that close() can replace it with how things stood then.
        display_id = f"agentnb-snapshot-{self.model_id}-{len(self._snapshots)}"
        self._snapshots.append(display_id)
        show(self._static_bundle(self._snapshot_prefix, NOTE), raw=True, display_id=display_id)

    @property
    def _snapshot_prefix(self) -> str:
        return f"st{self.model_id[:8]}-"

    def close(self) -> None:
        """Stop relaying and polling, forget listeners, close the widget.

        The static snapshot shown beside the panel is replaced by one of how things stand
        now, saying the panel was closed: without the live view (closed, or the notebook
        reopened without a kernel) a reader never sees the status from display time.
        """
        # Also called by Widget.__del__, possibly on a view whose __init__ failed half-way:
        # _detach() then finds nothing to forget.
        self._detach()
        self._watch.close()
        relay = getattr(self, "_relay", None)
        if relay is not None:
            relay.stop()
        shown = getattr(self, "_snapshots", None)
        if shown and self.comm is not None:  # closing twice leaves the first one
            self._snapshots = []
            self._leave_snapshot(shown)
        super().close()

    def _leave_snapshot(self, display_ids: list[str]) -> None:
        if sys.is_finalizing():  # Widget.__del__ at exit: no kernel left to tell
            return
        from IPython.display import update_display

        replace: Callable[..., None] = update_display  # untyped in IPython
        try:
            bundle = self._static_bundle(self._snapshot_prefix, CLOSED_NOTE)
        except AgentnbError as exc:  # the store was closed first: say so, show no status
            text = f"(The live panel was closed; its last state could not be read: {exc})"
            bundle = {"text/plain": text, "text/html": f"<pre>{html.escape(text)}</pre>"}
        for display_id in display_ids:
            replace(bundle, raw=True, display_id=display_id)

    @property
    def refreshes(self) -> int:
        """Updates sent to the browser so far (the coalesced rate, for benchmarks)."""
        return self._relay.refreshes

    # -- sending (relay thread) ----------------------------------------------------------

    def _post(self, content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        self.messages_sent += 1
        self.send(content, buffers=buffers)

    def _post_rows(self, view_id: str, kind: str, rows: list[dict[str, Any]]) -> None:
        """Replay a whole log to one view, in chunks; the first chunk resets the view's log."""
        chunks = [rows[i : i + REPLAY_CHUNK] for i in range(0, len(rows), REPLAY_CHUNK)] or [[]]
        for i, chunk in enumerate(chunks):
            self._post({"kind": kind, "view": view_id, kind: chunk, "reset": i == 0})

    def _send_viz_js(self) -> None:
        self._post({"kind": "viz_js"}, buffers=[viz_js_bytes()])

    # -- from the browser (the kernel's thread) ------------------------------------------

    def _page_msg(self, kind: object, view_id: str) -> bool:
        """Handle a message every panel understands; False if ``kind`` is not one."""
        if kind == "hello":
            self._views.add(view_id)
            self._relay.polling = True
            self._relay.submit(lambda: self._replay(view_id))
        elif kind == "bye":
            self._views.discard(view_id)
            self._relay.polling = bool(self._views)
        elif kind == "viz_js":
            self._relay.submit(self._send_viz_js)
        else:
            return False
        return True
