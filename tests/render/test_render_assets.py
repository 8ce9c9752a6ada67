"""The WebAssembly Graphviz for the widget ships inside the package, unaltered and licensed."""

from __future__ import annotations

import re

from agentnb.render.assets import (
    GRAPHVIZ_WASM_VERSION,
    VIZ_JS_SHA256,
    VIZ_JS_VERSION,
    viz_js_license_path,
    viz_js_path,
    viz_js_sha256,
)


def test_viz_js_is_the_published_file() -> None:
    assert viz_js_path().name == f"viz-{VIZ_JS_VERSION}.js"
    assert viz_js_sha256() == VIZ_JS_SHA256


def test_viz_js_is_one_self_contained_es_module() -> None:
    source = viz_js_path().read_text(encoding="utf-8")
    assert f"Viz.js {VIZ_JS_VERSION}" in source[:200]
    assert "export { engines, formats, graphvizVersion, instance };" in source
    # no static or dynamic imports: nothing is fetched from a CDN or elsewhere
    assert not re.search(r"^\s*import\s", source, re.MULTILINE)
    assert "import(" not in source
    assert 1_000_000 < len(source) < 1_500_000


def test_licenses_cover_viz_js_graphviz_and_expat() -> None:
    text = viz_js_license_path().read_text(encoding="utf-8")
    assert "MIT License" in text
    assert "Eclipse Public License - v 1.0" in text
    assert f"Graphviz {GRAPHVIZ_WASM_VERSION}" in text
    assert "Expat" in text
