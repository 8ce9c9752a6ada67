"""A throw-away JupyterLab server and the page actions the browser tests share.

Recipe (measured in /work/shared/NOTEBOOK-TESTING.md): serve a temporary copy of the test
notebooks on 127.0.0.1 with a token and temporary config/runtime dirs, in a new session so
one signal stops the server; the parent-death signal (``setpriv --pdeathsig``) stops it even
if pytest is killed. Kernels are the server's children and stop with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentnb._postgres_server import free_port

NOTEBOOKS = Path(__file__).parent / "notebooks"
COURSE = Path(__file__).resolve().parents[2] / "notebooks"
"""The course's notebooks: 06-09 (and the module 08 imports) are served under ``course/``."""
COURSE_FILES = ("0[6-9]-*.ipynb", "scale_out.py")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
LOCAL_HOSTS = ("127.0.0.1", "localhost")


def wait_for(
    condition: Callable[[], Any],
    timeout: float,
    what: str,
    every: float = 0.05,
    page: Any = None,
) -> Any:
    """Poll ``condition()`` until it returns something truthy; fail after ``timeout`` s.

    With a ``page``, the pauses go through Playwright: its sync API only handles the page's
    requests (which our route guard intercepts) while a Playwright call is in progress, so a
    plain ``time.sleep`` would stall the very save or message being waited for.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        if page is None:
            time.sleep(every)
        else:
            page.wait_for_timeout(every * 1000)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (kernels may sit in sessions of their own)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@dataclass
class Lab:
    """A running server: where it serves, its token, and the notebooks' directory."""

    process: subprocess.Popen[bytes]
    url: str
    token: str
    root: Path
    runtime: Path
    log: Path

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def page_url(self, notebook: str, app: str = "lab") -> str:
        prefix = "lab/tree" if app == "lab" else "notebooks"
        reset = "&reset" if app == "lab" else ""
        return f"{self.url}/{prefix}/{notebook}?token={self.token}{reset}"

    def kernel_eval(self, notebook: str, expression: str) -> str:
        """``repr(expression)`` evaluated in the kernel running ``notebook``."""
        return self.kernel_exec(notebook, f"print(repr({expression}))")

    def kernel_exec(self, notebook: str, code: str) -> str:
        """Run ``code`` in the kernel running ``notebook``, as a cell would; its stdout."""
        from jupyter_client import BlockingKernelClient

        (session,) = [s for s in self.api("/api/sessions") if s["path"].endswith(notebook)]
        client = BlockingKernelClient(
            connection_file=str(self.runtime / f"kernel-{session['kernel']['id']}.json")
        )
        client.load_connection_file()
        client.start_channels()
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["header"]["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        try:
            # A fresh client's IOPub subscription takes a moment to reach the kernel: output
            # published before then is lost, and with it the idle the reply waits for.
            # wait_for_ready returns once the kernel has answered on shell and IOPub both.
            client.wait_for_ready(timeout=60)
            reply = client.execute_interactive(code, output_hook=hook, timeout=30)
        finally:
            client.stop_channels()
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(out).strip()

    def stop(self) -> None:
        """Stop the server and everything it started, on every path."""
        below = descendants(self.process.pid)
        try:
            self.api("/api/shutdown", method="POST")
            self.process.wait(timeout=10)
        except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
            pass
        kills: list[Callable[[], None]] = [lambda: os.killpg(self.process.pid, signal.SIGKILL)]
        kills += [lambda pid=pid: os.kill(pid, signal.SIGKILL) for pid in below]
        for kill in kills:
            with contextlib.suppress(ProcessLookupError, PermissionError):  # gone already
                kill()
        self.process.wait(timeout=10)
        shutil.rmtree(self.runtime, ignore_errors=True)


def start_lab(tmp: Path) -> Lab:
    """Copy the test notebooks and the course's 06-09 (outputs cleared) into ``tmp`` and
    serve them."""
    import nbformat

    root, config, data = (tmp / d for d in ("root", "config", "data"))
    # The kernels' socket files live in the runtime directory, named after the kernel's id:
    # a short path keeps them within a socket path's 107 bytes (pytest's tmp_path may not).
    runtime = Path(tempfile.mkdtemp(prefix="agentnb-lab-"))
    for d in (root, config, data, tmp / "ipython", root / "course"):
        d.mkdir(parents=True)
    sources = [(s, root / s.name) for s in NOTEBOOKS.glob("*.ipynb")]
    for pattern in COURSE_FILES:
        sources += [(s, root / "course" / s.name) for s in COURSE.glob(pattern)]
    for source, target in sources:
        if source.suffix != ".ipynb":
            shutil.copyfile(source, target)
            continue
        nb = nbformat.read(source, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
        nbformat.write(nb, target)
    token, port = secrets.token_hex(16), free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTER_DATA_DIR": str(data),
        "IPYTHONDIR": str(tmp / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    argv = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--allow-root", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}", f"--LabApp.workspaces_dir={tmp / 'workspaces'}",
        f"--LabApp.user_settings_dir={tmp / 'settings'}", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--KernelManager.transport=ipc",  # socket files, not TCP ports: tests/kernels.py
    ]  # fmt: skip
    setpriv = shutil.which("setpriv")
    if setpriv:  # the server dies with this process, even on SIGKILL
        argv = [setpriv, "--pdeathsig", "KILL", "--", *argv]
    log = tmp / "lab.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            argv, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    lab = Lab(process, f"http://127.0.0.1:{port}", token, root, runtime, log)

    def ready() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"JupyterLab exited:\n{log.read_text()[-3000:]}")
        try:
            lab.api("/api/status")
        except (OSError, urllib.error.URLError):
            return False
        return True

    try:
        wait_for(ready, 60, "JupyterLab to answer", every=0.1)
    except BaseException:
        lab.stop()
        raise
    return lab


@dataclass
class Browser:
    """The browser plus what the page did that it must not: leave 127.0.0.1, open dialogs."""

    playwright: Any
    browser: Any
    context: Any
    external: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def new_page(self) -> Any:
        page = self.context.new_page()
        page.on("dialog", self._dialog)
        page.on("websocket", lambda ws: self._check(ws.url))
        return page

    def _dialog(self, dialog: Any) -> None:
        if dialog.type == "beforeunload":  # JupyterLab asking before the page reloads
            dialog.accept()
            return
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        with contextlib.suppress(Exception):
            dialog.dismiss()

    def _check(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about") or parts.hostname in LOCAL_HOSTS:
            return True
        self.external.append(url)
        return False

    def _route(self, route: Any) -> None:
        if self._check(route.request.url):
            route.continue_()
        else:
            route.abort()


@contextlib.contextmanager
def launch_browser() -> Iterator[Browser]:
    """Debian's headless Chromium through Playwright's bundled driver (nothing downloaded),
    every request it makes checked by :class:`Browser`; closed after the block."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        guard = Browser(playwright, chromium, context)
        context.route("**/*", guard._route)
        yield guard
        context.close()
        chromium.close()
    finally:
        playwright.stop()


def open_notebook(page: Any, lab: Lab, name: str) -> None:
    """Open ``name`` in JupyterLab, run all cells, wait until the kernel is idle again."""
    page.goto(lab.page_url(name))
    status = page.locator("#jp-main-statusbar")
    # "Idle" alone is said before the kernel exists; the kernel's name comes with it.
    status.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator('li[data-command="runmenu:run-all"]').click()

    # A fresh kernel numbers the cells it runs 1..n, so the last one shows [n]. Cells Lab has
    # windowed out of a long notebook show an empty prompt: unknown, not "not run".
    import nbformat

    cells = nbformat.read(lab.root / name, as_version=4).cells
    last = f"[{sum(cell.cell_type == 'code' for cell in cells)}]:"

    def all_ran() -> bool:
        prompts = [p.strip() for p in page.locator(".jp-InputPrompt").all_inner_texts()]
        return last in prompts and not {"[*]:", "[ ]:"} & set(prompts)

    wait_for(all_ran, 60, "every cell to run", page=page)
    status.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)


def run_widget(page: Any, title: str) -> Any:
    """The RunView whose title starts with ``title``, drawn and scrolled into view."""
    view = page.locator(".agentnb-rv", has=page.locator(".rv-title", has_text=title))
    view.wait_for()
    view.scroll_into_view_if_needed()
    page.wait_for_function(
        "el => el.dataset.drawn === 'true'", arg=view.element_handle(), timeout=30_000
    )
    return view


def reopen_without_widgets(page: Any, lab: Lab, name: str) -> None:
    """Save ``name``, drop its kernel and reload it: what a reader without the kernel sees."""
    page.locator(".lm-MenuBar-item", has_text="File").first.click()
    page.locator('li[data-command="docmanager:save"]').click()
    saved = lambda: "agentnb-static" in (lab.root / name).read_text()  # noqa: E731
    wait_for(saved, 15, "the save", page=page)
    for session in lab.api("/api/sessions"):
        if session["path"].endswith(name):
            lab.api(f"/api/sessions/{session['id']}", method="DELETE")
    page.goto(lab.page_url(name))
    page.locator(".agentnb-static").first.wait_for(timeout=30_000)
    page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle").wait_for()
