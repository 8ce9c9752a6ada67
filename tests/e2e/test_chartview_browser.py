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


def test_the_microstep_mode_steps_through_what_an_event_did(panel: Any) -> None:
    panel.get_by_role("button", name="start", exact=True).click()
    wait_for(panel, "el.dataset.state === 'shut on'")
    wait_for(panel, "el.dataset.timers === '1'")
    assert "beep" in panel.locator(".mv-timer").inner_text()
    panel.get_by_role("button", name="open", exact=True).click()
    wait_for(panel, "el.dataset.state === 'ajar off'")
    wait_for(panel, "el.dataset.microsteps === '1'")
    panel.locator(".mv-step-next").click()
    wait_for(panel, "el.dataset.microstep === '1'")
    lit = panel.evaluate(LIT)
    assert lit["taken"] == 2  # shut --open--> ajar and on --open--> off, in one microstep
    assert lit["exited"] >= 2
    assert sorted(lit["nodes"]) == ["ajar", "off"]
    panel.locator(".mv-step-live").click()
    wait_for(panel, "el.dataset.microstep === ''")
    assert panel.evaluate(LIT)["taken"] == 0
