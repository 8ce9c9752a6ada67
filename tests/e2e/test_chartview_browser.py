"""MachineView of a statechart in a real JupyterLab page: clusters lit, microstep mode, timers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import Browser, Lab, open_notebook

pytestmark = pytest.mark.browser

NOTEBOOK = "chartview.ipynb"

LIT = """(el) => ({
    boxes: [...el.querySelectorAll("g.cluster.is-current")].length,
    nodes: [...el.querySelectorAll("g.agentnb-node.is-current")].map(g => g.dataset.name),
    taken: [...el.querySelectorAll("g.agentnb-edge.is-traversed")].length,
    exited: [...el.querySelectorAll("g.is-visited")].length,
})"""


@pytest.fixture(scope="module")
def panel(lab: Lab, browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    open_notebook(page, lab, NOTEBOOK)
    view = page.locator(".agentnb-mv", has=page.locator(".mv-title", has_text="oven chart"))
    view.wait_for()
    view.scroll_into_view_if_needed()
    page.wait_for_function(
        "el => el.dataset.drawn === 'true'", arg=view.element_handle(), timeout=30_000
    )
    yield view
    page.close()


def wait_for(view: Any, script: str, arg: Any = None) -> None:
    view.page.wait_for_function(
        f"([el, arg]) => {script}", arg=[view.element_handle(), arg], timeout=15_000
    )


def test_the_configuration_is_lit_boxes_and_leaves(panel: Any) -> None:
    lit = panel.evaluate(LIT)
    assert lit["boxes"] == 3  # appliance, door, heat
    assert sorted(lit["nodes"]) == ["off", "shut"]
    # Before any event, the microsteps shown are the instance's start, not an event's.
    head = panel.locator(".mv-steps .mv-section-head").inner_text()
    assert head.startswith("Microsteps (")
    assert head.endswith(") of the instance's start")
    first = panel.locator(".mv-step-title").first.inner_text()
    assert " · start of the instance · enter " in first
    assert " on start" not in first


def test_the_microstep_mode_steps_through_what_an_event_did(panel: Any) -> None:
    panel.get_by_role("button", name="start", exact=True).click()
    wait_for(panel, "el.dataset.state === 'shut on'")
    wait_for(panel, "el.dataset.timers === '1'")
    assert "beep" in panel.locator(".mv-timer").inner_text()
    panel.get_by_role("button", name="open", exact=True).click()
    wait_for(panel, "el.dataset.state === 'ajar off'")
    wait_for(panel, "el.dataset.microsteps === '1'")
    assert panel.locator(".mv-steps .mv-section-head").inner_text() == (
        'Microsteps (1) of the last event, "open"'
    )
    prev, nxt, live = (panel.locator(f".mv-step-{b}") for b in ("prev", "next", "live"))
    where = panel.locator(".mv-step-where")
    # Live is after the last microstep: back into it with prev, nothing after it.
    assert (prev.is_enabled(), nxt.is_enabled(), live.is_enabled()) == (True, False, False)
    assert where.inner_text() == "live: the configuration now"
    prev.click()
    wait_for(panel, "el.dataset.microstep === '1'")
    assert (prev.is_enabled(), nxt.is_enabled(), live.is_enabled()) == (False, False, True)
    assert where.inner_text() == "microstep mode: 1 of 1"
    lit = panel.evaluate(LIT)
    assert lit["taken"] == 2  # shut --open--> ajar and on --open--> off, in one microstep
    assert lit["exited"] >= 2
    assert sorted(lit["nodes"]) == ["ajar", "off"]
    panel.locator(".mv-step-live").click()
    wait_for(panel, "el.dataset.microstep === ''")
    assert panel.evaluate(LIT)["taken"] == 0
