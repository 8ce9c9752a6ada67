"""The course in the browser, for real: the JupyterLite site ``make lite`` built, served from
127.0.0.1, opens notebook 01 in Debian's Chromium, runs every cell in Pyodide, then drives a
run from the panel (Step, Approve) to its end, and sees a database on the browser's drive
refused (SQLite cannot work there: agentnb.store.sqlite.keeps_sizes). No request may leave
127.0.0.1.
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

    def ran_or_stopped() -> str:
        prompts = [p.strip() for p in page.locator(".jp-InputPrompt").all_inner_texts()]
        if last in prompts and not {"[*]:", "[ ]:"} & set(prompts):
            return "ran"
        # A cell that raised stops the run: fail then, not at the deadline.
        idle = page.locator("#jp-main-statusbar").get_by_text(KERNEL_IDLE).count() > 0
        return "stopped" if idle and tracebacks(page) else ""

    # Pyodide starts and installs the site's wheels in the page first: minutes on a busy CI.
    try:
        outcome = wait_for(ran_or_stopped, 420, "every cell to run in Pyodide", page=page)
    except AssertionError as timeout:
        outcome = str(timeout)
    if outcome != "ran":
        page.screenshot(path=ARTIFACTS / "lite-run-all.png")
        outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
        prompts = page.locator(".jp-InputPrompt").all_inner_texts()
        raise AssertionError(f"{outcome}; prompts {prompts}; outputs {outputs[-3:]}")


def run_below(page: Any, code: str) -> None:
    """Run ``code`` in a new cell below the last one (Enter: edit it, not command it)."""
    page.locator(".jp-Cell").last.click()
    for key in ("Escape", "b", "Enter"):
        page.keyboard.press(key)
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")


def tracebacks(page: Any) -> list[str]:
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]


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
    assert tracebacks(page) == []
    # A panel on a new big refund, in a cell added below the last.
    run_below(page, 'workflow.start({"requested": 900}, run_id="lite-browser").view()')
    view = page.locator(".agentnb-rv", has=page.locator(".rv-title", has_text="run lite-browser"))
    try:
        view.wait_for(timeout=120_000)
    except Exception:
        page.screenshot(path=ARTIFACTS / "lite-panel.png")
        outputs = page.locator(".jp-OutputArea-output").all_inner_texts()
        raise AssertionError(f"no panel; the last outputs: {outputs[-2:]}") from None
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
    # The notebook works in the kernel's memory (the build's first cell): a database on the
    # browser's drive, where SQLite cannot work, is refused, saying where to put it.
    run_below(page, 'SqliteCheckpointer("/drive/refused.sqlite3")')
    refused = "StoreFileError: cannot open /drive/refused.sqlite3: the file system holding /drive"
    wait_for(lambda: any(refused in t for t in tracebacks(page)), 60, "the refusal", page=page)
    assert browser.external == []
    assert browser.dialogs == []
