"""Browser fixtures: one JupyterLab server per session, one headless Chromium per module.

Nothing is downloaded: Playwright's bundled driver drives ``/usr/bin/chromium`` (never
``playwright install``). Every request the page makes is checked; any that would leave
127.0.0.1 is aborted and reported by the test that looks at it.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from lab_support import CHROMIUM, Browser, Lab, launch_browser, start_lab

MISSING_BROWSER = (
    f"BROWSER TESTS NOT RUN: {CHROMIUM} is missing. Install it with "
    "`apt-get install -y chromium` (CI does); these tests are the only check of the widget "
    "in a real browser."
)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A JupyterLab server on 127.0.0.1 serving fresh copies of tests/e2e/notebooks."""
    if not Path(CHROMIUM).exists():
        pytest.skip(MISSING_BROWSER)

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt  # so the teardown below runs when CI stops the job

    previous = signal.signal(signal.SIGTERM, terminate)
    tmp = tmp_path_factory.mktemp("lab")
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No "get Jupyter news?" toast over the widgets (and no request for news).
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    server = start_lab(tmp)
    try:
        yield server
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)


# Module scope, not session: while Playwright's sync API is started it leaves its event loop
# marked as running in this thread, and any later test calling asyncio.run() would fail.
@pytest.fixture(scope="module")
def browser(lab: Lab) -> Iterator[Browser]:
    with launch_browser() as guard:
        yield guard
