"""RunView in a real JupyterLab page (headless Debian Chromium driven by Playwright).

One server and one page for the module: ``notebooks/runview.ipynb`` displays one view per
scenario (approve, reject, CLI approval, hostile strings, failure, approver policies). The
last test saves the notebook, drops the kernel and reloads: what a reader without a kernel
sees.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import ARTIFACTS, Browser, Lab, open_notebook, run_widget, wait_for
from playwright.sync_api import expect

from agentnb import Identity, SqliteCheckpointer, Status

pytestmark = pytest.mark.browser

NOTEBOOK = "runview.ipynb"
XSS = [
    "<script>window.__xss = 1</script>",
    '<img src=x onerror="window.__xss = 2">',
    '"><svg onload="window.__xss = 3">',
]


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    open_notebook(page, lab, NOTEBOOK)
    yield page
    page.close()


NODE_INFO = """(el, name) => {
    const g = [...el.querySelectorAll("g.agentnb-node")].find(g => g.dataset.name === name);
    return g && {classes: [...g.classList], text: g.querySelector("text")?.textContent ?? ""};
}"""


def node(view: Any, name: str) -> dict[str, Any]:
    """The classes and drawn text of the node named ``name`` (no selector escaping needed)."""
    info = view.evaluate(NODE_INFO, name)
    assert info, f"no node {name!r} in the drawing"
    return dict(info)


def has_class(info: dict[str, Any], name: str) -> bool:
    return name in info["classes"]


def wait_attr(view: Any, attr: str, value: str, timeout: float = 45_000) -> None:
    view.page.wait_for_function(
        "([el, attr, value]) => el.getAttribute(attr) === value",
        arg=[view.element_handle(), attr, value],
        timeout=timeout,
    )


def step_until_pending(view: Any) -> int:
    """Press Step until the run pauses for approval; return how many presses it took."""
    for presses in range(1, 6):
        before = int(view.get_attribute("data-events"))
        view.get_by_role("button", name="Step").click()

        def stepped(before: int = before) -> bool:
            # A step logs events; "not busy" alone is also true before the click is handled.
            logged = int(view.get_attribute("data-events")) > before
            return logged and view.get_attribute("data-busy") == ""

        wait_for(stepped, 45, "the step to finish", page=view.page)
        if view.get_attribute("data-status") == "pending":
            return presses
    raise AssertionError("the run never paused")


def store(lab: Lab) -> SqliteCheckpointer:
    return SqliteCheckpointer(lab.root / "runs.sqlite3")


def payments(lab: Lab) -> list[int]:
    """The refunds the notebook's payment service has paid so far."""
    paid = ast.literal_eval(lab.kernel_eval(NOTEBOOK, "payments"))
    assert isinstance(paid, list)
    return paid


def test_step_to_the_pause_then_a_double_approve_decides_once_and_pays_once(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "approve path")
    assert step_until_pending(view) == 1
    assert has_class(node(view, "planner"), "is-visited")
    assert has_class(node(view, "human_approval"), "is-pending")
    types = view.locator(".rv-log-row").evaluate_all("rows => rows.map(r => r.dataset.type)")
    assert types == ["run_started", "node_start", "state_update", "interrupted"]
    assert view.locator(".rv-log-row[data-type='interrupted'] .rv-node").inner_text() == (
        "human_approval"
    )
    assert "before “human_approval”" in view.locator(".rv-approval-head").inner_text()
    shown = json.loads(view.locator(".rv-approval-state").inner_text())
    assert shown["amount"] == 1000
    view.screenshot(path=ARTIFACTS / "runview-pending.png")

    view.locator(".rv-approver").fill("ada")
    view.locator(".rv-comment").fill("within policy")
    # Both presses in one browser task, so both reach the kernel before any reply. With a
    # real double click the second press often lands after the reply has disabled the
    # button and is swallowed (right too, but then the store's refusal goes untested).
    view.locator(".rv-approve").evaluate("button => { button.click(); button.click(); }")
    wait_attr(view, "data-status", "completed")
    view.locator(".rv-error", has_text="not pending approval").wait_for()
    assert has_class(node(view, "END"), "is-completed")
    assert "approved by ada" in view.locator(".rv-decided").inner_text()
    assert view.locator(".rv-approve").is_disabled()
    assert view.locator(".rv-tree", has_text='"success"').count() == 1
    with store(lab) as s:
        run_id = view.get_attribute("data-run-id")
        assert [d.accepted for d in s.decisions(run_id)] == [True, False]
    assert payments(lab).count(1000) == 1
    view.screenshot(path=ARTIFACTS / "runview-completed.png")

    # Time travel: the state and overlay after step 1, read-only, then back to live.
    view.locator(".rv-slider").fill("1")
    wait_attr(view, "data-history", "1")
    assert "after step 1" in view.locator(".rv-state .rv-section-head").inner_text()
    assert has_class(node(view, "human_approval"), "is-pending")
    assert view.locator(".rv-tree", has_text='"success"').count() == 0
    view.get_by_role("button", name="Live").click()
    wait_attr(view, "data-history", "live")
    assert has_class(node(view, "END"), "is-completed")


def test_reject_with_the_browser_drawn_diagram_ends_the_run_unpaid(page: Any, lab: Lab) -> None:
    view = run_widget(page, "reject path")
    assert view.get_attribute("data-drawer") == "viz"  # laid out by Graphviz in WebAssembly
    step_until_pending(view)
    view.locator(".rv-approver").fill("")  # the store refuses a nameless decision
    view.get_by_role("button", name="Reject").click()
    view.locator(".rv-error", has_text="needs the approver's name").wait_for()
    view.locator(".rv-approver").fill("bo")
    view.locator(".rv-comment").fill("too much")
    view.get_by_role("button", name="Reject").click()
    wait_attr(view, "data-status", "rejected")
    # The refusal was answered by the decision that went through: it goes with the pause.
    expect(view.locator(".rv-error")).to_be_hidden()
    expect(view.locator(".rv-notice")).to_have_text("Rejected by bo.")
    assert has_class(node(view, "human_approval"), "is-rejected")
    assert "rejected by bo" in view.locator(".rv-decided").inner_text()
    assert payments(lab).count(800) == 0
    view.screenshot(path=ARTIFACTS / "runview-rejected.png")


def test_an_approval_from_the_cli_shows_up_and_the_kernel_continues(page: Any, lab: Lab) -> None:
    view = run_widget(page, "cli path")
    assert view.get_attribute("data-status") == "pending"
    assert view.get_by_role("button", name="Approve").is_enabled()
    run_id = view.get_attribute("data-run-id")
    subprocess.run(
        [sys.executable, "-m", "agentnb.cli", "approve", run_id, "--db",
         str(lab.root / "runs.sqlite3"), "--as", "cli-user", "--comment", "from a shell"],
        check=True, capture_output=True,
    )  # fmt: skip
    view.locator(".rv-decided", has_text="approved by cli-user").wait_for(timeout=5_000)
    wait_attr(view, "data-status", "completed", timeout=5_000)
    assert view.locator(".rv-approve").is_disabled()
    assert payments(lab).count(700) == 1
    # Two views on this page draw in the browser, from one download of viz.js.
    viz = page.evaluate("({imports: __agentnb_viz.imports, requests: __agentnb_viz.requests})")
    assert viz == {"imports": 1, "requests": 1}


def test_hostile_strings_render_literally_and_run_nothing(page: Any, browser: Browser) -> None:
    view = run_widget(page, "xss path")
    assert view.locator(".rv-title").inner_text() == f"xss path {XSS[1]}"
    step_until_pending(view)
    view.locator(".rv-approver").fill(XSS[1])
    view.locator(".rv-comment").fill(XSS[0])
    view.get_by_role("button", name="Approve").click()
    wait_attr(view, "data-status", "completed")
    # The decision, the log and the state arrive in the same batches as the status, but
    # the DOM may apply them a frame apart: wait for each with Playwright's retrying expect.
    expect(view.locator(".rv-decided")).to_contain_text(f"approved by {XSS[1]}", timeout=10_000)
    expect(view.locator(".rv-log-row .rv-node", has_text=XSS[1]).first).to_be_visible()
    expect(view.locator(".rv-tree .rv-key", has_text=XSS[0])).to_have_count(1, timeout=10_000)
    assert node(view, XSS[1])["text"] == XSS[1]
    assert view.locator("img, script, iframe, foreignObject").count() == 0
    assert page.evaluate("window.__xss") is None
    assert browser.dialogs == []
    view.screenshot(path=ARTIFACTS / "runview-xss.png")


SHAPE_COLOURS = """(el, name) => {
    const g = [...el.querySelectorAll("g.agentnb-node")].find(g => g.dataset.name === name);
    const shape = g.querySelector(":scope > :is(path, polygon, ellipse)");
    const text = g.querySelector(":scope > text");
    return {fill: getComputedStyle(shape).fill, text: getComputedStyle(text).fill};
}"""
RED, WHITE = "rgb(217, 83, 79)", "rgb(255, 255, 255)"  # live.css --lv-red, failed text


def test_a_failing_node_is_shown_in_the_error_area_and_the_drawing(page: Any) -> None:
    # A MachineView below (the notebook's last cell) brings its panel's stylesheet too.
    machine = page.locator(".agentnb-mv", has=page.locator(".mv-title", has_text="beside"))
    machine.scroll_into_view_if_needed()
    page.wait_for_function(
        "el => el.dataset.drawn === 'true'", arg=machine.element_handle(), timeout=30_000
    )
    view = run_widget(page, "fail path")
    view.get_by_role("button", name="Run").click()
    wait_attr(view, "data-status", "failed")
    assert "ValueError: card declined" in view.locator(".rv-error").inner_text()
    charge = node(view, "charge")
    assert has_class(charge, "is-failed")
    assert has_class(charge, "is-visited")
    assert view.evaluate(SHAPE_COLOURS, "charge") == {"fill": RED, "text": WHITE}
    # The machine panel's visited states keep their own pale green.
    assert machine.evaluate(SHAPE_COLOURS, "ON")["fill"] == "rgb(211, 236, 217)"
    view.screenshot(path=ARTIFACTS / "runview-failed-beside-a-machine.png")


def test_a_burst_of_events_arrives_whole_and_the_log_shows_only_the_rows_in_view(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "burst path")
    view.get_by_role("button", name="Run").click()
    wait_attr(view, "data-status", "completed", timeout=60_000)
    with store(lab) as s:
        total = len(s.events(view.get_attribute("data-run-id")))
    assert total > 6000
    wait_attr(view, "data-events", str(total))
    rows = view.locator(".rv-log-row")
    # Following the end of the log: its last row is the run's last event.
    expect(rows.last).to_have_attribute("data-type", "completed", timeout=10_000)
    assert rows.count() <= 14  # the rows in view (220 px of 18 px rows), not the log
    view.locator(".rv-filter").select_option("completed")
    expect(view.locator(".rv-log-row")).to_have_count(1, timeout=10_000)
    expect(view.locator(".rv-log-row")).to_have_attribute("data-type", "completed")
    view.locator(".rv-filter").select_option("")
    # How smooth the page stays is a speed, measured by bench/bench_widget.py (updates per
    # second): a wall-clock limit here failed whenever the machine was busy.
    view.screenshot(path=ARTIFACTS / "runview-burst.png")


HOSTILE_SVG = """<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"
  width="300" height="120" onload="window.__xss = 'svg onload'">
<script>window.__xss = 'script'</script>
<style>@import url(https://example.com/x.css); text { fill: red }</style>
<foreignObject width="100" height="50">
  <iframe xmlns="http://www.w3.org/1999/xhtml" src="javascript:parent.__xss = 'iframe'"/>
  <img xmlns="http://www.w3.org/1999/xhtml" src="x" onerror="window.__xss = 'img'"/>
</foreignObject>
<g id="hostile" onmouseover="window.__xss = 'hover'" style="fill: url(javascript:x)">
  <a href="javascript:window.__xss = 'href'"><text x="10" y="20">hostile drawing</text></a>
  <a xlink:href="javascript:window.__xss = 'xlink'"><text x="10" y="40">xlink</text></a>
  <a href=" java&#10;script:window.__xss = 'split'"><text x="10" y="60">split</text></a>
  <a><animate attributeName="href" to="javascript:window.__xss = 'animate'" begin="0s"/>
    <set attributeName="href" to="javascript:window.__xss = 'set'"/>
    <text x="10" y="80">animated</text></a>
  <image href="x" onerror="window.__xss = 'image'"/>
  <use href="data:image/svg+xml,&lt;svg onload='window.__xss=1'/&gt;"/>
  <a href="#hostile"><text x="150" y="20" fill="#1d2733">inside link</text></a>
</g>
</svg>"""
SURVIVORS = """el => {
    const svg = el.querySelector(".rv-diagram svg");
    const all = [svg, ...svg.querySelectorAll("*")];
    return {
        elements: [...new Set(all.map(e => e.localName))].sort(),
        attributes: [...new Set(all.flatMap(e => [...e.attributes].map(a => a.name)))].sort(),
        links: all.flatMap(e => [...e.attributes]).filter(a => a.localName === "href")
            .map(a => a.value),
    };
}"""
TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def test_hostile_svg_fed_straight_to_the_browser_scrub_runs_nothing(
    page: Any, lab: Lab, browser: Browser
) -> None:
    view = run_widget(page, "fail path")
    # Past Python's check: the kernel posts the drawing message itself, so only the page's
    # scrub (agentnb.render.svg.SVG_ALLOW, shipped as the _svg_allow trait) stands between.
    lab.kernel_exec(
        NOTEBOOK,
        f"fail_view._post({{'kind': 'diagram', 'mode': 'svg', 'svg': {HOSTILE_SVG!r}, "
        "'nodes': {}, 'edges': {}, 'titles': {}})",
    )
    view.locator(".rv-diagram text", has_text="hostile drawing").wait_for()
    page.evaluate(TWO_FRAMES)  # any load or animation the drawing could start has had its turn
    view.locator(".rv-diagram text", has_text="hostile drawing").hover()
    view.locator(".rv-diagram text", has_text="hostile drawing").click()
    view.locator(".rv-diagram text", has_text="animated").click()
    page.evaluate(TWO_FRAMES)
    assert page.evaluate("window.__xss") is None
    left = view.evaluate(SURVIVORS)
    assert left["elements"] == ["a", "g", "svg", "text"]
    assert left["links"] == ["#hostile"]
    assert not [a for a in left["attributes"] if a.startswith("on") or a == "style"]
    assert view.locator(".rv-diagram text", has_text="inside link").count() == 1
    assert browser.external == []
    assert browser.dialogs == []


IDENTITY = "identity: ada (provider)"  # the notebook's provider: Identity("ada", ["finance"])


def approver_field_is_fixed_to(view: Any, name: str) -> None:
    """The approver field shows ``name`` and takes no other: typing changes nothing."""
    field = view.locator(".rv-approver")
    expect(field).to_have_value(name)
    expect(field).not_to_be_editable()
    field.focus()
    view.page.keyboard.type("eve")
    expect(field).to_have_value(name)


def test_with_an_approver_policy_the_panel_decides_as_the_kernels_identity_only(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "ada-only path")
    assert view.get_attribute("data-status") == "pending"
    expect(view.locator(".rv-policy")).to_have_text(f"{IDENTITY} · may decide: approvers ada")
    approver_field_is_fixed_to(view, "ada")  # not the "typed name" the cell passed
    view.locator(".rv-comment").fill("as myself")
    view.get_by_role("button", name="Approve").click()
    wait_attr(view, "data-status", "completed")
    expect(view.locator(".rv-decided")).to_contain_text("approved by ada")
    with store(lab) as s:
        decisions = s.decisions(view.get_attribute("data-run-id"))
    assert [(d.approver, d.identity, d.accepted) for d in decisions] == [
        ("ada", Identity("ada", ["finance"], "provider"), True)
    ]
    view.screenshot(path=ARTIFACTS / "runview-policy.png")


def test_an_identity_the_policy_refuses_is_told_so_and_nothing_is_decided(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "bob-only path")
    expect(view.locator(".rv-policy")).to_have_text(f"{IDENTITY} · may decide: approvers bob")
    approver_field_is_fixed_to(view, "ada")
    view.get_by_role("button", name="Approve").click()
    refusal = view.locator(".rv-error")
    expect(refusal).to_contain_text("Refused: 'ada' may not decide run", timeout=10_000)
    expect(refusal).to_contain_text("ada is not among the approvers of before:pay (bob)")
    assert view.get_attribute("data-status") == "pending"
    expect(view.get_by_role("button", name="Approve")).to_be_enabled()
    run_id = view.get_attribute("data-run-id")
    with store(lab) as s:
        assert s.get_run(run_id).status == Status.PENDING
        audit = [(d.approver, d.accepted, d.reason) for d in s.decisions(run_id)]
    assert audit == [
        ("ada", False, "not authorized: ada is not among the approvers of before:pay (bob)")
    ]
    view.screenshot(path=ARTIFACTS / "runview-policy-refused.png")


def test_without_a_policy_the_name_field_stays_editable_beside_the_identity(
    page: Any, lab: Lab
) -> None:
    view = run_widget(page, "anyone path")
    expect(view.locator(".rv-policy")).to_have_text(IDENTITY)
    field = view.locator(".rv-approver")
    expect(field).to_be_editable()
    field.fill("Ada Lovelace")
    view.get_by_role("button", name="Approve").click()
    wait_attr(view, "data-status", "completed")
    expect(view.locator(".rv-decided")).to_contain_text("approved by Ada Lovelace (identity ada)")
    with store(lab) as s:
        (decision,) = s.decisions(view.get_attribute("data-run-id"))
    assert (decision.approver, decision.identity.name) == ("Ada Lovelace", "ada")


def test_no_request_left_127_0_0_1(page: Any, browser: Browser) -> None:
    assert page.evaluate("window.__xss") is None
    assert browser.external == []
    assert browser.dialogs == []


def test_without_a_kernel_the_saved_notebook_shows_the_static_snapshot(page: Any, lab: Lab) -> None:
    # Runs last: it saves the notebook, drops its kernel and reloads the page.
    page.locator(".lm-MenuBar-item", has_text="File").first.click()
    page.locator('li[data-command="docmanager:save"]').click()
    saved = lambda: "agentnb-static" in (lab.root / NOTEBOOK).read_text()  # noqa: E731
    wait_for(saved, 15, "the save", page=page)
    for session in lab.api("/api/sessions"):
        if session["path"].endswith(NOTEBOOK):
            lab.api(f"/api/sessions/{session['id']}", method="DELETE")
    page.goto(lab.page_url(NOTEBOOK))
    first = page.locator(".agentnb-static").first  # Lab renders far-away outputs lazily
    first.wait_for(timeout=30_000)
    page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle").wait_for()
    assert page.locator(".agentnb-rv").count() == 0
    first.scroll_into_view_if_needed()
    assert first.is_visible()
    assert first.locator("svg g.agentnb-node").count() >= 3
    assert "refund · run" in first.inner_text()
    first.screenshot(path=ARTIFACTS / "runview-no-kernel.png")
