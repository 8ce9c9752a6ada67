"""RunView of long runs in a real JupyterLab page: a 100,000-event log scrolled end to end,
the history slider on a 50,000-step run, a node's tokens streaming into its row, and a
subgraph's cluster collapsed and expanded.

How fast the page stays (first paint, per scroll, long tasks while tokens stream) is a speed:
bench/bench_widget.py measures it beside a small run. Here: the right rows, a bounded DOM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import ARTIFACTS, Browser, Lab, open_notebook, run_widget, wait_for
from playwright.sync_api import expect

from agentnb import SqliteCheckpointer

pytestmark = pytest.mark.browser

NOTEBOOK = "longrun.ipynb"
EVENTS = 100_002
ROW_PX = 18
MAX_DOM_ROWS = 14  # 220 px of 18 px rows, and the one cut at the bottom


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    open_notebook(page, lab, NOTEBOOK)
    yield page
    page.close()


@pytest.fixture(scope="module")
def seqs(lab: Lab) -> list[int]:
    with SqliteCheckpointer(lab.root / "longrun.sqlite3") as store:
        return [e.seq for e in store.events("long-run")]


SHOWN = """(el) => [...el.querySelectorAll(".rv-log-row")].map(r => ({
    i: Number(r.dataset.i), seq: r.dataset.seq === "" ? null : Number(r.dataset.seq),
    type: r.dataset.type || null}))"""


def shown(view: Any) -> list[dict[str, Any]]:
    return list(view.evaluate(SHOWN))


def scroll_to(view: Any, top: float) -> None:
    view.locator(".rv-log-rows").evaluate("(box, top) => { box.scrollTop = top; }", top)


def rows_at(view: Any, first: int) -> list[dict[str, Any]]:
    """Wait until the rows from ``first`` on are shown and loaded; return them."""

    def ready() -> list[dict[str, Any]] | None:
        rows = shown(view)
        ok = rows and rows[0]["i"] == first and all(r["seq"] is not None for r in rows)
        return rows if ok else None

    found: list[dict[str, Any]] = wait_for(ready, 30, f"rows from {first}", page=view.page)
    return found


def first_in_view(view: Any) -> int:
    """The row the scroll position puts at the top: one per 18 px."""
    return int(view.locator(".rv-log-rows").evaluate("box => box.scrollTop") // ROW_PX)


def test_a_100k_event_log_shows_the_right_rows_at_the_end_middle_and_start(
    page: Any, seqs: list[int]
) -> None:
    assert len(seqs) == EVENTS
    view = run_widget(page, "long path")
    expect(view).to_have_attribute("data-events", str(EVENTS), timeout=30_000)
    # It opens at the end of the log, following it.
    end = rows_at(view, first_in_view(view))
    assert end[-1]["i"] == EVENTS - 1
    assert end[-1]["seq"] == seqs[-1]
    assert end[-1]["type"] == "completed"
    for where in (EVENTS // 2 * ROW_PX, 0, 123_457 * 9, (EVENTS - 1) * ROW_PX):
        scroll_to(view, where)
        rows = rows_at(view, first_in_view(view))
        assert len(rows) <= MAX_DOM_ROWS
        assert [r["seq"] for r in rows] == [seqs[r["i"]] for r in rows]
        assert [r["i"] for r in rows] == list(range(rows[0]["i"], rows[0]["i"] + len(rows)))
    assert view.locator(".rv-log-row").count() <= MAX_DOM_ROWS  # never the log in the DOM
    view.screenshot(path=ARTIFACTS / "runview-100k-events.png")


def test_the_filter_counts_and_pages_one_type_of_a_100k_event_log(page: Any, lab: Lab) -> None:
    view = run_widget(page, "long path")
    with SqliteCheckpointer(lab.root / "longrun.sqlite3") as store:
        updates = [e.seq for e in store.events("long-run") if e.type == "state_update"]
    view.locator(".rv-filter").select_option("state_update")
    expect(view.locator(".rv-filter option[value='state_update']")).to_have_text(
        f"state_update ({len(updates)})"
    )
    assert rows_at(view, first_in_view(view))[-1]["seq"] == updates[-1]
    scroll_to(view, 20_000 * ROW_PX)
    rows = rows_at(view, 20_000)
    assert [r["seq"] for r in rows] == [updates[r["i"]] for r in rows]
    assert {r["type"] for r in rows} == {"state_update"}
    view.locator(".rv-filter").select_option("")


def test_the_history_slider_loads_one_step_of_a_50k_step_run(page: Any) -> None:
    view = run_widget(page, "long path")
    view.locator(".rv-slider").evaluate(
        "s => { s.value = '25000'; s.dispatchEvent(new Event('input')); }"
    )
    expect(view).to_have_attribute("data-history", "25000", timeout=30_000)
    expect(view.locator(".rv-tree .rv-leaf", has_text="n")).to_contain_text("25000")
    assert "State after step 25000" in view.locator(".rv-state .rv-section-head").inner_text()
    view.get_by_role("button", name="Live").click()
    expect(view).to_have_attribute("data-history", "live")


# Every change of the stream row, recorded in the page as it happens: (items, ended, status).
WATCH_STREAM = """(el) => {
    window.__stream = [];
    const seen = () => {
        const r = el.querySelector(".rv-stream-row");
        if (r) window.__stream.push(
            [Number(r.dataset.items), r.classList.contains("is-done"), el.dataset.status]);
    };
    new MutationObserver(seen).observe(el, {
        subtree: true, attributes: true, attributeFilter: ["data-items", "class", "data-status"]});
}"""


def test_a_node_streaming_1000_tokens_a_second_fills_its_row_as_it_runs(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "stream path")
    view.evaluate(WATCH_STREAM)
    view.get_by_role("button", name="Run").click()
    expect(view).to_have_attribute("data-status", "completed", timeout=60_000)
    row = view.locator(".rv-stream-row")
    expect(row).to_have_class("rv-stream-row is-done", timeout=10_000)
    said = int(lab.kernel_eval(NOTEBOOK, "stream_run.state['said']"))
    assert said > 1000  # 2 s of ten tokens every 10 ms, however slow the machine
    # The tokens came into the row while the node ran, in many appends, not at its end.
    # (The last append may carry the last token before the node's end is committed: the
    # row can be full while it still runs.)
    changes = page.evaluate("window.__stream")
    growing = sorted({items for items, done, status in changes if status == "running" and not done})
    assert len(growing) >= 3, changes
    assert 0 < growing[0] < growing[-1] <= said
    assert int(row.get_attribute("data-items") or 0) == said
    text = row.locator(".rv-stream-text").inner_text()
    assert len(text) <= 4000  # the newest characters only, and it says so
    assert text.rstrip().endswith(f"t{said - 1}")
    assert "earlier characters not shown" in row.locator(".rv-stream-meta").inner_text()
    assert view.locator(".rv-stream-row").count() == 1
    view.screenshot(path=ARTIFACTS / "runview-streamed-tokens.png")


LIT = """([el, name]) => {
    const g = [...el.querySelectorAll("g.agentnb-node")].find(g => g.dataset.name === name);
    return g ? [...g.classList].filter(c => c.startsWith("is-")).sort() : null;
}"""


def lit(view: Any, name: str) -> list[str] | None:
    """The state classes of the node drawn as ``name`` (None when it is not drawn)."""
    found = view.evaluate(f"(el, name) => ({LIT})([el, name])", name)
    return None if found is None else list(found)


def test_a_subgraph_folds_to_its_node_which_stays_lit_for_what_runs_inside(
    page: Any,
) -> None:
    view = run_widget(page, "subgraph path")
    view.get_by_role("button", name="Run").click()
    expect(view).to_have_attribute("data-status", "pending", timeout=30_000)
    # Paused inside the subgraph: its inner node is lit where it is drawn, in the box.
    wait_for(
        lambda: "is-pending" in (lit(view, "research/summarize") or []),
        30,
        "the inner pause",
        page=page,
    )
    assert "is-visited" in (lit(view, "research/search") or [])
    assert view.locator("text.rv-fold").count() == 1
    view.screenshot(path=ARTIFACTS / "runview-subgraph-open.png")

    view.locator("text.rv-fold").click()
    expect(view).to_have_attribute("data-collapsed", "research:subgraph", timeout=30_000)
    assert lit(view, "research/search") is None  # the box and what it held are gone
    assert lit(view, "research/summarize") is None
    folded = lit(view, "research") or []
    assert {"is-collapsed", "is-pending", "is-current"} <= set(folded), folded
    label = view.locator("g.agentnb-node.is-collapsed").evaluate("g => g.textContent")
    assert "research ⊞ 2 inside" in label
    view.screenshot(path=ARTIFACTS / "runview-subgraph-folded.png")

    view.locator("g.agentnb-node.is-collapsed").click()
    expect(view).to_have_attribute("data-collapsed", "", timeout=30_000)
    assert "is-pending" in (lit(view, "research/summarize") or [])
    assert "is-collapsed" not in (lit(view, "research") or [])
