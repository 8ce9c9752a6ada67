"""RunView of parallel runs in a real JupyterLab page: a superstep lit, a question answered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import Browser, Lab, open_notebook, run_widget

from agentnb import SqliteCheckpointer
from agentnb.widgets._events import frontier_text, next_texts

pytestmark = pytest.mark.browser

NOTEBOOK = "parallelview.ipynb"
LIT = """(el) => [...el.querySelectorAll("g.agentnb-node.is-current")].map(g => g.dataset.name)"""


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    open_notebook(page, lab, NOTEBOOK)
    yield page
    page.close()


def wait_status(view: Any, status: str) -> None:
    view.page.wait_for_function(
        "([el, s]) => el.getAttribute('data-status') === s",
        arg=[view.element_handle(), status],
        timeout=45_000,
    )


def test_every_task_of_the_next_superstep_is_lit(page: Any) -> None:
    view = run_widget(page, "superstep path")
    page.wait_for_function(
        f"el => ({LIT})(el).length === 2", arg=view.element_handle(), timeout=15_000
    )
    assert sorted(view.evaluate(LIT)) == ["papers", "web"]


def test_header_history_and_log_name_each_superstep_as_the_store_recorded_it(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "superstep path")
    run_id = view.get_attribute("data-run-id")
    where = view.locator(".rv-where")
    assert where.inner_text().startswith("at papers + web · step 1/")
    view.locator(".rv-step").click()  # web and papers, together
    page.wait_for_function(
        "el => el.querySelector('.rv-where').textContent.startsWith('at write · step 2/')",
        arg=view.element_handle(),
        timeout=30_000,
    )
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        events = store.events(run_id)
        leads = next_texts(events)
        saved = store.checkpoint(run_id, 1)
        after_plan = frontier_text(saved.node, saved.tasks)
    assert after_plan == "papers + web"
    # Every state_update row reads "→ <the next superstep>", as the store's events say.
    expected = [
        (str(e.seq), e.node, f"→ {leads[e.step]}") for e in events if e.type == "state_update"
    ]
    assert [x[2] for x in expected] == ["→ papers + web", "→ write", "→ write"]
    row = ".rv-log-row.t-state_update"
    page.wait_for_function(
        "([el, n]) => el.querySelectorAll('.rv-log-row.t-state_update').length >= n",
        arg=[view.element_handle(), len(expected)],
        timeout=15_000,
    )
    shown = view.locator(row).evaluate_all(
        "rows => rows.map(r => [r.dataset.seq, r.querySelector('.rv-node').textContent,"
        " r.querySelector('.rv-sum').textContent])"
    )
    assert [(seq, node) for seq, node, _ in shown] == [(seq, node) for seq, node, _ in expected]
    for (_, _, summary), (_, _, arrow) in zip(shown, expected, strict=True):
        assert summary.endswith(arrow)
    view.locator(".rv-slider").evaluate(
        "el => { el.value = '1'; el.dispatchEvent(new Event('input')); }"
    )
    page.wait_for_function(
        "el => el.dataset.history === '1'", arg=view.element_handle(), timeout=15_000
    )
    head = view.locator(".rv-state .rv-section-head")
    head.filter(has_text="State after step 1").wait_for(timeout=15_000)
    assert head.inner_text() == f"State after step 1 (read-only; next: {after_plan})"


def test_a_question_is_answered_once_from_the_panel(page: Any, lab: Lab) -> None:
    view = run_widget(page, "question path")
    assert "How many seats?" in view.locator(".rv-approval-head").inner_text()
    answer = view.locator(".rv-answer")
    answer.fill("three, please")  # not JSON: refused in the page, nothing sent
    view.get_by_role("button", name="Answer").click()
    assert "not JSON" in view.locator(".rv-error").inner_text()
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        assert store.decisions("ask-run") == []
    answer.fill("[3]")  # a list: no form for it, the answer is JSON text
    view.get_by_role("button", name="Answer").click()
    wait_status(view, "completed")
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        decisions = store.decisions("ask-run")
        assert [(d.accepted, d.edit) for d in decisions] == [(True, {"answer": [3]})]
        assert store.checkpoint("ask-run").state == {"seats": [3]}


def test_a_form_is_drawn_from_the_schema_and_checked_before_sending(page: Any, lab: Lab) -> None:
    view = run_widget(page, "form path")
    fields = view.locator(".rv-answer-field")
    assert fields.count() == 4  # name, seats, plan, invoice
    assert view.locator(".rv-answer").is_hidden()  # no JSON to type: a form
    view.get_by_label("name", exact=True).fill("Ada")
    view.get_by_role("button", name="Answer").click()  # seats left empty
    assert "seats: a number is needed" in view.locator(".rv-error").inner_text()
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        assert store.decisions("form-run") == []
    view.get_by_label("seats", exact=True).fill("4")
    fields.nth(2).locator("select").select_option(index=1)
    fields.nth(3).locator("input").check()
    view.get_by_role("button", name="Answer").click()
    wait_status(view, "completed")
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        order = store.checkpoint("form-run").state["order"]
    assert order == {"name": "Ada", "seats": 4, "plan": "pro", "invoice": True}


def test_the_approver_edits_the_state_before_approving(page: Any, lab: Lab) -> None:
    view = run_widget(page, "edit path")
    edit = view.locator(".rv-edit")
    edit.fill("{amount: 300}")  # not JSON: refused in the page
    view.get_by_role("button", name="Approve").click()
    assert "the edits are not JSON" in view.locator(".rv-error").inner_text()
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        assert store.decisions("edit-run") == []
    edit.fill('{"amount": 300}')
    view.get_by_role("button", name="Approve").click()  # the panel then continues the run
    wait_status(view, "completed")
    with SqliteCheckpointer(lab.root / "parallel.sqlite3") as store:
        assert store.checkpoint("edit-run").state == {"amount": 300, "paid": 300}
        [decision] = store.decisions("edit-run")
    assert decision.edit is not None
    assert decision.edit["update"] == {"amount": 300}
