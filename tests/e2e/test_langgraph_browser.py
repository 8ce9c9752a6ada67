"""A LangGraph graph in RunView in a real JupyterLab page: Step runs one superstep of the
LangGraph thread, Approve resumes it past its interrupt_before, once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import Browser, Lab, open_notebook, run_widget

pytestmark = pytest.mark.browser

NOTEBOOK = "langgraphview.ipynb"
CLASSES = """(el, name) => {
    const g = [...el.querySelectorAll("g.agentnb-node")].find(g => g.dataset.name === name);
    return g ? [...g.classList] : null;
}"""


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Browser) -> Iterator[Any]:
    pytest.importorskip("langgraph")
    page = browser.new_page()
    open_notebook(page, lab, NOTEBOOK)
    yield page
    page.close()


def wait_attr(view: Any, attr: str, value: str) -> None:
    view.page.wait_for_function(
        "([el, attr, value]) => el.getAttribute(attr) === value",
        arg=[view.element_handle(), attr, value],
        timeout=45_000,
    )


def test_step_runs_one_superstep_and_approve_resumes_the_langgraph_thread_once(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "langgraph path")
    assert view.evaluate(CLASSES, "plan") is not None  # LangGraph's own nodes are drawn
    view.get_by_role("button", name="Step").click()
    wait_attr(view, "data-status", "pending")  # plan ran; pay waits for approval
    assert "is-pending" in view.evaluate(CLASSES, "pay")
    assert "is-visited" in view.evaluate(CLASSES, "plan")
    assert lab.kernel_eval(NOTEBOOK, 'app.get_state(config).values["log"]') == "['plan']"
    assert lab.kernel_eval(NOTEBOOK, "app.get_state(config).next") == "('pay',)"

    # Both presses in one browser task, so both reach the kernel before any reply.
    view.locator(".rv-approve").evaluate("button => { button.click(); button.click(); }")
    wait_attr(view, "data-status", "completed")
    view.locator(".rv-error", has_text="not pending approval").wait_for()
    assert "approved by ada" in view.locator(".rv-decided").inner_text()
    assert lab.kernel_eval(NOTEBOOK, 'app.get_state(config).values["log"]') == "['plan', 'pay']"
    accepted = lab.kernel_eval(NOTEBOOK, "[d.accepted for d in lg_run.decisions()]")
    assert accepted == "[True, False]"


LIT = """(el, name) => {
    const g = [...el.querySelectorAll("g.agentnb-node")].find(g => g.dataset.name === name);
    return g ? [...g.classList].filter(c => c.startsWith("is-")).sort() : null;
}"""


def test_a_langgraph_subgraph_is_lit_inside_and_folds_to_its_lit_node(page: Any) -> None:
    view = run_widget(page, "langgraph subgraph")
    view.get_by_role("button", name="Run").click()
    wait_attr(view, "data-status", "pending")  # interrupt('why?') inside sub, at ask
    page.wait_for_function(
        f"([el, name]) => (({LIT})(el, name) || []).includes('is-pending')",
        arg=[view.element_handle(), "sub/ask"],
        timeout=30_000,
    )
    assert "is-visited" in view.evaluate(LIT, "sub/look")
    view.locator("text.rv-fold").click()
    wait_attr(view, "data-collapsed", "sub:subgraph")
    assert view.evaluate(LIT, "sub/ask") is None  # the box and what it held are gone
    assert {"is-collapsed", "is-pending", "is-current"} <= set(view.evaluate(LIT, "sub"))
    view.locator("g.agentnb-node.is-collapsed").click()
    wait_attr(view, "data-collapsed", "")
    assert "is-pending" in view.evaluate(LIT, "sub/ask")
