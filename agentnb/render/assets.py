"""The Graphviz WebAssembly build shipped for the live widget (no CDN, ever).

``static/viz-<version>.js`` is ``dist/viz.js`` of the npm package ``@viz-js/viz``, unmodified:
one ES module with no imports and the wasm embedded (1.19 MB, 468 KB gzipped). Its licenses
(MIT for Viz.js and Expat, EPL-1.0 for Graphviz) are in the ``.LICENSE.txt`` file beside it.

Load it once per page, not once per widget: as an anywidget ``_esm`` it would be re-sent
with every widget instance.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = [
    "GRAPHVIZ_WASM_VERSION",
    "VIZ_JS_SHA256",
    "VIZ_JS_VERSION",
    "viz_js_license_path",
    "viz_js_path",
    "viz_js_sha256",
]

VIZ_JS_VERSION = "3.31.0"
"""Version of the npm package ``@viz-js/viz`` the file comes from."""
GRAPHVIZ_WASM_VERSION = "16.1.0"
"""Graphviz version compiled into it (its ``graphvizVersion`` export)."""
VIZ_JS_SHA256 = "b9840ae5b70681356c207510db8820ac3f883607740616455d9c7c47d67ea646"
"""SHA-256 of the file as published, so a test can tell it was not altered."""

_STATIC = Path(__file__).parent / "static"


def viz_js_path() -> Path:
    """Path of the Viz.js ES module inside the installed package.

    Example:
        >>> viz_js_path().name
        'viz-3.31.0.js'
    """
    return _STATIC / f"viz-{VIZ_JS_VERSION}.js"


def viz_js_license_path() -> Path:
    """Path of the licenses that apply to :func:`viz_js_path`."""
    return _STATIC / f"viz-{VIZ_JS_VERSION}.LICENSE.txt"


def viz_js_sha256() -> str:
    """SHA-256 of the shipped file, to compare with :data:`VIZ_JS_SHA256`."""
    return hashlib.sha256(viz_js_path().read_bytes()).hexdigest()
