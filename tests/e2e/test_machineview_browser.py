"""MachineView in a real JupyterLab page (headless Debian Chromium driven by Playwright).

``notebooks/machineview.ipynb`` shows a traffic light that follows ``light.json`` through a
MachineReloader. The tests run in order on one page: press buttons, send a refused event
from the kernel, then edit the definition file from the kernel and watch the panel follow.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import ARTIFACTS, Browser, Lab, open_notebook, reopen_without_widgets
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

NOTEBOOK = "machineview.ipynb"
XSS = '<img src=x onerror="window.__xss = 1">'


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    open_notebook(page, lab, NOTEBOOK)
    yield page
    page.close()


@pytest.fixture
def panel(page: Any) -> Any:
    """The traffic light's live panel, drawn and scrolled into view."""
    view = page.locator(".agentnb-mv", has=page.locator(".mv-title", has_text="traffic light"))
    view.wait_for()
    view.scroll_into_view_if_needed()
    page.wait_for_function(
        "el => el.dataset.drawn === 'true'", arg=view.element_handle(), timeout=30_000
    )
    return view


LIT = """(el) => {
    const named = (sel) => [...el.querySelectorAll(sel)];
    return {
        current: named("g.agentnb-node.is-current").map(g => g.dataset.name),
        last: named("g.agentnb-edge.is-last").map(g => g.id.replace(/^mv[^-]*-/, "")),
    };
}"""


def lit(view: Any) -> dict[str, list[str]]:
    """The nodes lit as current and the edges marked last, read from the SVG classes."""
    return dict(view.evaluate(LIT))


def wait_state(view: Any, state: str) -> None:
    view.page.wait_for_function(
        "([el, state]) => el.dataset.state === state",
        arg=[view.element_handle(), state],
        timeout=10_000,
    )


def event_button(view: Any, event: str) -> Any:
    return view.get_by_role("button", name=event, exact=True)


def test_timer_buttons_move_the_light_and_the_drawing_follows(panel: Any) -> None:
    assert lit(panel) == {"current": ["RED"], "last": ["edge-START~RED"]}
    night = event_button(panel, "night")
    assert night.is_disabled()
    assert night.get_attribute("title") == "guard night_mode refuses this context"
    reason = panel.locator(".mv-event[data-event='night'] .mv-why")
    assert reason.inner_text() == "guard night_mode refuses this context"
    panel.evaluate("el => { el.querySelector('svg').dataset.mark = 'first layout'; }")

    event_button(panel, "timer").click()
    wait_state(panel, "GREEN")
    expect(panel.locator(".mv-row")).to_have_count(1)
    assert lit(panel) == {"current": ["GREEN"], "last": ["edge-RED~GREEN~timer"]}
    assert event_button(panel, "night").get_attribute("title") == "not allowed in GREEN"

    event_button(panel, "timer").click()
    wait_state(panel, "YELLOW")
    expect(panel.locator(".mv-row")).to_have_count(2)
    assert lit(panel) == {"current": ["YELLOW"], "last": ["edge-GREEN~YELLOW~timer"]}
    assert panel.locator(".mv-row").first.get_attribute("data-seq") == "2"  # newest on top
    assert panel.locator("svg[data-mark='first layout']").count() == 1  # lit, never redrawn
    assert "#2 GREEN --timer--> YELLOW" in panel.locator(".mv-notice").inner_text()
    panel.screenshot(path=ARTIFACTS / "machineview-yellow.png")


def test_an_event_refused_in_a_cell_shows_its_message(panel: Any, lab: Lab) -> None:
    said = lab.kernel_exec(
        NOTEBOOK,
        "try:\n    light.send('night')\nexcept TransitionNotAllowed as error:\n    print(error)",
    )
    assert "'night' is not allowed in state 'YELLOW'" in said
    error = panel.locator(".mv-error")
    expect(error).to_have_text(f"Refused: {said}", timeout=5_000)
    assert panel.get_attribute("data-state") == "YELLOW"
    panel.screenshot(path=ARTIFACTS / "machineview-refused.png")


def test_editing_the_definition_file_redraws_and_adds_the_new_event(panel: Any, lab: Lab) -> None:
    assert event_button(panel, "malfunction").count() == 0
    lab.kernel_exec(NOTEBOOK, "write_definition(light_document('blinking'))")
    panel.page.wait_for_function(
        "el => el.dataset.generation === '2'", arg=panel.element_handle(), timeout=10_000
    )
    malfunction = event_button(panel, "malfunction")
    expect(malfunction).to_be_visible()
    assert malfunction.is_disabled()
    assert malfunction.get_attribute("title") == "not allowed in YELLOW"
    assert panel.locator("g.agentnb-node[data-name='blinking']").count() == 1
    assert panel.locator("svg[data-mark='first layout']").count() == 0  # drawn anew, once
    assert lit(panel)["current"] == ["YELLOW"]  # the new drawing is lit at once
    assert "generation 2 from light.json" in panel.locator(".mv-reload").inner_text()

    event_button(panel, "timer").click()
    wait_state(panel, "RED")
    expect(event_button(panel, "malfunction")).to_be_enabled()
    panel.screenshot(path=ARTIFACTS / "machineview-reloaded.png")


def test_a_broken_definition_file_shows_its_problems_and_keeps_the_old_one(
    panel: Any, lab: Lab
) -> None:
    lab.kernel_exec(NOTEBOOK, "write_definition({'name': 'traffic_light', 'states': []})")
    reload = panel.locator(".mv-reload.is-refused")
    expect(reload).to_contain_text("refused", timeout=10_000)
    assert reload.locator("li").count() >= 1
    assert panel.get_attribute("data-generation") == "2"
    expect(event_button(panel, "malfunction")).to_be_enabled()


def test_user_data_is_shown_as_text_and_nothing_left_the_machine(
    panel: Any, page: Any, browser: Browser
) -> None:
    note = panel.locator(".mv-tree .mv-leaf", has=page.locator(".mv-key", has_text="note"))
    assert note.locator(".mv-val").inner_text() == json.dumps(XSS)
    assert panel.locator("img, script, iframe, foreignObject").count() == 0
    assert page.evaluate("window.__xss") is None
    # The static snapshot beside the live panel is in the page, hidden by the panel's CSS.
    snapshot = page.locator(".jp-OutputArea-child", has=page.locator(".agentnb-static"))
    assert snapshot.count() == 1
    assert snapshot.is_hidden()
    assert browser.external == []
    assert browser.dialogs == []


def test_without_a_kernel_the_saved_notebook_shows_the_static_snapshot(page: Any, lab: Lab) -> None:
    # Runs last: it saves the notebook, drops its kernel and reloads the page.
    reopen_without_widgets(page, lab, NOTEBOOK)
    snapshot = page.locator(".agentnb-static").first
    assert page.locator(".agentnb-mv").count() == 0
    snapshot.scroll_into_view_if_needed()
    assert snapshot.is_visible()
    assert snapshot.locator("svg g.agentnb-node").count() >= 3
    text = snapshot.inner_text()
    assert "traffic_light · instance" in text
    assert "context: " in text
    assert page.locator(".agentnb-static img, .agentnb-static script").count() == 0
    snapshot.screenshot(path=ARTIFACTS / "machineview-no-kernel.png")
