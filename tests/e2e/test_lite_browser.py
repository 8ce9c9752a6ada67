"""The course in the browser, for real: the JupyterLite site ``make lite`` built, served from
127.0.0.1, opens notebook 01 in Debian's Chromium, runs every cell in Pyodide, then drives a
run from the panel (Step, Approve) to its end. No request may leave 127.0.0.1.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from lab_support import ARTIFACTS, CHROMIUM, Browser, launch_browser, wait_for

SITE = Path(__file__).parents[2] / "docs" / "_build" / "lite"
NOTEBOOK = "01-quickstart.ipynb"
KERNEL_IDLE = "Python (Pyodide) | Idle"

# Pyodide starts, then installs the site's wheels, in the page: minutes on a loaded machine.
pytestmark = [pytest.mark.browser, pytest.mark.lite, pytest.mark.slow, pytest.mark.timeout(900)]


class Quiet(http.server.SimpleHTTPRequestHandler):
    """The site's files, with the types a browser insists on, and no log line per request."""

    extensions_map: ClassVar[dict[str, str]] = {
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
    }

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    if not (SITE / "jupyter-lite.json").exists():
        pytest.fail(f"no JupyterLite site at {SITE}: build it with `make lite` first")
    handler = functools.partial(Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
    with launch_browser() as guard:
        yield guard


def run_all(page: Any, cells: int) -> None:
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('li[data-command="runmenu:run-all"]').click()
    last = f"[{cells}]:"

    def all_ran() -> bool:
        prompts = [p.strip() for p in page.locator(".jp-InputPrompt").all_inner_texts()]
        return last in prompts and not {"[*]:", "[ ]:"} & set(prompts)

    # Pyodide starts and installs the site's wheels in the page first: minutes on a busy CI.
    try:
        wait_for(all_ran, 420, "every cell to run in Pyodide", page=page)
    except AssertionError as timeout:
        page.screenshot(path=ARTIFACTS / "lite-run-all.png")
        outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
        prompts = page.locator(".jp-InputPrompt").all_inner_texts()
        raise AssertionError(f"{timeout}; prompts {prompts}; outputs {outputs[-3:]}") from None


def test_notebook_01_runs_in_the_browser_and_its_panel_steps_and_approves(
    browser: Browser, site_url: str
) -> None:
    import nbformat

    page = browser.new_page()
    page.goto(f"{site_url}/lab/index.html?path={NOTEBOOK}")
    status = page.locator("#jp-main-statusbar")
    status.get_by_text(KERNEL_IDLE).wait_for(timeout=300_000)
    cells = nbformat.read(SITE / "files" / NOTEBOOK, as_version=4).cells
    code_cells = sum(cell.cell_type == "code" for cell in cells)
    run_all(page, code_cells)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert tracebacks == []
    # A panel on a new big refund, in a cell added below the last.
    page.locator(".jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.keyboard.type('workflow.start({"requested": 900}, run_id="in-the-browser").view()')
    page.keyboard.press("Shift+Enter")
    view = page.locator(".agentnb-rv", has=page.locator(".rv-title", has_text="in-the-browser"))
    view.wait_for(timeout=120_000)
    view.scroll_into_view_if_needed()
    for _ in range(5):
        if view.get_attribute("data-status") == "pending":
            break
        before = int(view.get_attribute("data-events") or 0)
        view.get_by_role("button", name="Step").click()

        def stepped(before: int = before) -> bool:
            logged = int(view.get_attribute("data-events") or 0) > before
            return logged and view.get_attribute("data-busy") == ""

        wait_for(stepped, 120, "a step to finish", page=page)
    assert view.get_attribute("data-status") == "pending"
    view.locator(".rv-approver").fill("student")
    view.get_by_role("button", name="Approve").click()
    wait_for(
        lambda: view.get_attribute("data-status") == "completed", 120, "the run to end", page=page
    )
    view.screenshot(path=ARTIFACTS / "lite-runview.png")
    assert browser.external == []
    assert browser.dialogs == []
