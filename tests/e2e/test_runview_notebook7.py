"""RunView in Jupyter Notebook 7 (its own page, same widget manager family as Lab)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import ARTIFACTS, Browser, Lab, wait_for

pytestmark = pytest.mark.browser

NOTEBOOK = "notebook7.ipynb"


def kernel_connected(lab: Lab) -> bool:
    """The page's kernel exists, is idle and has the page's websocket connected."""
    sessions = [s for s in lab.api("/api/sessions") if s["path"].endswith(NOTEBOOK)]
    if not sessions:
        return False
    kernel = lab.api(f"/api/kernels/{sessions[0]['kernel']['id']}")
    return bool(kernel["execution_state"] == "idle" and kernel["connections"] > 0)


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    page.goto(lab.page_url(NOTEBOOK, app="notebook"))
    wait_for(lambda: kernel_connected(lab), 60, "the notebook's kernel", page=page)
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('li[data-command="runmenu:run-all"]').click()
    page.locator(".jp-InputPrompt", has_text="[1]:").wait_for(timeout=60_000)
    yield page
    page.close()


def test_step_and_approve_in_notebook_7(page: Any, lab: Lab, browser: Browser) -> None:
    view = page.locator(".agentnb-rv")
    view.wait_for()
    page.wait_for_function("el => el.dataset.drawn === 'true'", arg=view.element_handle())
    view.get_by_role("button", name="Step").click()
    page.wait_for_function("el => el.dataset.status === 'pending'", arg=view.element_handle())
    assert view.locator(".rv-approver").input_value() == "nb7"
    view.get_by_role("button", name="Approve").click()
    page.wait_for_function("el => el.dataset.status === 'completed'", arg=view.element_handle())
    assert "approved by nb7" in view.locator(".rv-decided").inner_text()
    assert lab.kernel_eval(NOTEBOOK, "payments") == "[900]"
    assert browser.external == []
    view.screenshot(path=ARTIFACTS / "runview-notebook7.png")
