"""The documentation site is private and offline: no page pulls a script, stylesheet, font or
image from another host (no CDN, no web fonts). Plain links to other sites are fine.

It reads the site `make docs` built (make test builds it first); without one it builds it.
"""

from __future__ import annotations

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SITE = ROOT / "docs" / "_build" / "html"

# What a browser fetches by itself: src= of anything, href= of <link> (stylesheets, icons,
# preloads), url(...) and @import in CSS, and import/fetch of an absolute URL in JS.
FETCHED_IN_HTML = re.compile(
    r"""<(?:script|img|source|iframe|embed|video|audio|input)\b[^>]*\bsrc\s*=\s*["']?([^"'\s>]+)"""
    r"""|<link\b[^>]*\bhref\s*=\s*["']?([^"'\s>]+)"""
    r"""|\bsrcset\s*=\s*["']([^"']+)""",
    re.I,
)
FETCHED_IN_CSS = re.compile(r"""url\(\s*["']?([^"')]+)|@import\s+["']([^"']+)""", re.I)
FETCHED_IN_JS = re.compile(
    r"""\b(?:import|fetch|importScripts)\s*\(\s*["'`]((?:https?:)?//[^"'`]+)"""
    r"""|\bfrom\s+["']((?:https?:)?//[^"']+)""",
    re.I,
)
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def external(urls: list[str]) -> list[str]:
    found = []
    for url in urls:
        for part in url.split(","):  # srcset lists "URL WIDTH, URL WIDTH"
            part = part.strip().split(" ")[0]
            if EXTERNAL.match(part) and not part.startswith("data:"):
                found.append(part)
    return found


def fetched(path: Path) -> list[str]:
    text = path.read_text(errors="replace")
    pattern = {".html": FETCHED_IN_HTML, ".css": FETCHED_IN_CSS, ".js": FETCHED_IN_JS}
    return external([g for m in pattern[path.suffix].finditer(text) for g in m.groups() if g])


@pytest.fixture(scope="module")
def site() -> Path:
    if not (SITE / "index.html").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "sphinx",
                "-W",
                "--keep-going",
                "-n",
                "-q",
                "-b",
                "html",
                str(ROOT / "docs"),
                str(SITE),
            ],
            check=True,
        )
    return SITE


def test_the_checker_sees_each_kind_of_external_fetch(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text(
        '<script src="https://cdn.example/x.js"></script>'
        "<link rel=stylesheet href=//fonts.example/css>"
        '<img srcset="a.png 1x, https://img.example/b.png 2x">'
        '<a href="https://python.org/">a plain link is fine</a>'
        '<script src="_static/local.js"></script>'
    )
    css = tmp_path / "s.css"
    css.write_text("@font-face{src:url(https://fonts.example/f.woff2)} a{background:url(x.png)}")
    js = tmp_path / "s.js"
    js.write_text('import("https://esm.example/m.js"); fetch("searchindex.js")')
    assert fetched(page) == [
        "https://cdn.example/x.js",
        "//fonts.example/css",
        "https://img.example/b.png",
    ]
    assert fetched(css) == ["https://fonts.example/f.woff2"]
    assert fetched(js) == ["https://esm.example/m.js"]


@pytest.mark.slow  # builds the site unless make docs did
def test_the_site_has_every_page(site: Path) -> None:
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    for name in (
        "index.html",
        "getting-started.html",
        "coming-from.html",
        "changelog.html",
        "reference/api.html",
        "reference/cli.html",
        "guides/teaching.html",
        "course/01-quickstart.html",
        "course/09-agent-loop.html",
    ):
        assert name in pages
    cli = (site / "reference" / "cli.html").read_text()
    assert "agentnb approve" in cli
    assert "--workflow" in cli


@pytest.mark.slow  # builds the site unless make docs did
def test_no_page_script_stylesheet_font_or_image_comes_from_another_host(site: Path) -> None:
    files = [p for p in site.rglob("*") if p.suffix in {".html", ".css", ".js"}]
    assert len(files) > 20
    offenders = {p.relative_to(site).as_posix(): fetched(p) for p in files}
    assert {name: urls for name, urls in offenders.items() if urls} == {}


def test_no_agentnb_cross_reference_is_let_off() -> None:
    # make docs is nitpicky: only the standard library's and third parties' types (whose
    # inventories cannot be fetched offline) may go unresolved, never one of agentnb's
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    assert not [w for w in conf["suppress_warnings"] if w.startswith("ref")]
    names = [
        "agentnb.fsm.content.Content",
        "agentnb._display.Drawable",
        "agentnb.render.export.draw",
        "StateLike",
        "Emitted",
        "Run",
    ]
    for _, pattern in conf["nitpick_ignore_regex"]:
        assert not [name for name in names if re.fullmatch(pattern, name)], pattern
    assert not [target for _, target in conf.get("nitpick_ignore", []) if "agentnb" in target]


def test_each_type_named_in_a_signature_is_listed_where_it_is_defined() -> None:
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    section = conf["_signature_types_section"]()  # raises for a type that has moved
    for path in conf["SIGNATURE_TYPES"]:
        assert f":: {path}\n" in section


@pytest.mark.slow  # builds the site unless make docs did
def test_each_course_page_links_to_its_live_version_or_says_why_it_has_none(site: Path) -> None:
    build = runpy.run_path(str(ROOT / "docs" / "lite" / "build.py"))
    pages = {p.stem for p in (site / "course").glob("[0-9]*.html")}
    assert pages == {*build["LITE"], *build["LEFT_OUT"]}  # every course page is one or other
    for name in build["LITE"]:
        page = (site / "course" / f"{name}.html").read_text()
        link = f'href="../../lite/lab/index.html?path={name}.ipynb">Run in the browser</a>'
        assert link in page, name
    for name, why in build["LEFT_OUT"].items():
        page = (site / "course" / f"{name}.html").read_text()
        assert "Run in the browser</a>" not in page, name
        assert f"Not in the browser version of the course: this notebook {why}." in page, name
