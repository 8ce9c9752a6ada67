"""Drive live views without a browser: fake front-end messages in, recorded messages out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

from agentnb import END, Run, StateGraph, Workflow
from agentnb.store.base import Checkpointer
from agentnb.widgets import RunView
from agentnb.widgets._live import LiveView
from tests.waiting import until

T = TypeVar("T")
V = TypeVar("V", bound=LiveView)

XSS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    '"><svg onload=alert(1)>',
    "javascript:alert(1)",
    "]]><!--&amp;",
]


def run_async(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a scenario inside a running event loop, as a Jupyter kernel would."""
    return asyncio.run(main())


class Recorder(Generic[V]):
    """A live view plus a recorder of everything it sends, standing in for the browser."""

    def __init__(self, view: V) -> None:
        self.sent: list[tuple[dict[str, Any], list[Any] | None]] = []
        self.view = view
        self.view.comm.send = self._record  # the comm is a DummyComm outside a kernel

    def _record(
        self, data: Any = None, metadata: Any = None, buffers: list[Any] | None = None
    ) -> None:
        self.sent.append((data, buffers))

    def click(self, kind: str, **content: Any) -> None:
        """What the browser sends when a button is pressed."""
        self.view._on_msg(self.view, {"kind": kind, **content}, [])

    def hello(self, view_id: str = "v1") -> None:
        self.click("hello", view=view_id)

    def customs(self, kind: str | None = None, view: str | None = None) -> list[dict[str, Any]]:
        """Custom messages sent so far (of one kind, to one view or broadcast)."""
        out = []
        for data, _ in list(self.sent):
            if not data or data.get("method") != "custom":
                continue
            content = data["content"]
            if (kind is None or content.get("kind") == kind) and (
                view is None or content.get("view") in (None, view)
            ):
                out.append(content)
        return out

    def buffers(self, kind: str) -> list[list[Any]]:
        return [
            buffers or []
            for data, buffers in list(self.sent)
            if data and data.get("method") == "custom" and data["content"].get("kind") == kind
        ]

    def updates(self) -> list[dict[str, Any]]:
        """Trait updates (state messages) sent so far."""
        return [d["state"] for d, _ in list(self.sent) if d and d.get("method") == "update"]

    def close(self) -> None:
        self.view.close()

    def drawing(self) -> dict[str, Any]:
        """Open a browser view and wait for the one drawing it is sent."""
        self.hello()

        async def main() -> None:
            await until(lambda: self.customs("diagram"), what="the drawing")

        run_async(main)
        (diagram,) = self.customs("diagram")
        return diagram

    def assert_polls_only_while_a_view_is_open(self) -> None:
        """Two views open, one closes: the relay still polls; the last closes: it stops;
        closing the panel stops the relay thread."""
        relay = self.view._relay
        assert relay.polling is False
        self.hello("a")
        self.hello("b")
        self.click("bye", view="a")
        assert relay.polling is True
        self.click("bye", view="b")
        assert relay.polling is False
        self.close()
        assert not relay.running


def displayed(view: LiveView, monkeypatch: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a notebook shows for ``view`` (the widget, then its static snapshot); the view
    is closed afterwards."""
    shown: list[dict[str, Any]] = []
    monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append(data))
    model_id = view.model_id
    try:
        view._ipython_display_()
    finally:
        view.close()
    widget, snapshot = shown
    assert widget["application/vnd.jupyter.widget-view+json"]["model_id"] == model_id
    return widget, snapshot


class Frontend(Recorder[RunView]):
    """A RunView and its recorder."""

    def __init__(self, run: Run, **options: Any) -> None:
        super().__init__(RunView(run, **options))

        self._reqs = 0

    def logged_seqs(self, view: str = "v1") -> list[int]:
        """Sequence numbers of every log row this view was sent unasked, in arrival order."""
        return [r["seq"] for m in self.customs("events", view) for r in m["events"]]

    def log(self, view: str = "v1") -> list[dict[str, Any]]:
        """The newest rows the view was sent unasked: a replay resets them, rows merge by seq."""
        rows: dict[int, dict[str, Any]] = {}
        for message in self.customs("events", view):
            if message.get("reset"):
                rows = {}
            rows.update({r["seq"]: r for r in message["events"]})
        return [rows[seq] for seq in sorted(rows)]

    def total(self, view: str = "v1") -> int:
        """How many events the view was last told the log has."""
        news = self.customs("events", view)
        return int(news[-1]["total"]) if news else 0

    async def rows(
        self, start: int, count: int, kind: str = "", view: str = "v1"
    ) -> dict[str, Any]:
        """What the browser gets when it scrolls to rows ``start`` .. ``start + count``."""
        self._reqs += 1
        req = self._reqs
        self.click("rows", view=view, filter=kind, start=start, count=count, req=req)

        def answer() -> dict[str, Any] | None:
            return next((m for m in self.customs("rows", view) if m["req"] == req), None)

        await until(lambda: answer() is not None, what=f"rows {start}+{count}")
        found = answer()
        assert found is not None
        return found

    async def whole_log(self, kind: str = "", view: str = "v1", page: int = 200) -> list[int]:
        """Every row's seq, scrolled through page by page as a browser would."""
        seqs: list[int] = []
        total = self.total(view) if not kind else None
        start = 0
        while True:
            got = await self.rows(start, page, kind, view)
            seqs += [r["seq"] for r in got["rows"]]
            start += page
            if start >= (total if total is not None else got["total"]):
                return seqs


def two_gate_workflow(store: Checkpointer) -> Workflow:
    """a -> ‖ b -> ‖ c -> END: two approvals in a row, so a pending digest can go stale."""
    g = StateGraph("gates")
    g.add_node("a", lambda s: {"n": 1})
    g.add_node("b", lambda s: {"n": 2})
    g.add_node("c", lambda s: {"n": 3})
    g.set_entry_point("a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", END)
    g.add_interrupt_before("b", "c")
    return g.compile(store)


def ticker_workflow(store: Checkpointer, steps: int) -> Workflow:
    """One node looping ``steps`` times as fast as the runtime goes: a burst of events."""
    g = StateGraph("ticker")
    g.add_node("tick", lambda s: {"n": s["n"] + 1})
    g.set_entry_point("tick")
    g.add_conditional_edge(
        "tick", lambda s: "again" if s["n"] < steps else "done", {"again": "tick", "done": END}
    )
    return g.compile(store, max_steps=steps + 1)
