"""DOT -> SVG (or PNG, PDF) with the Graphviz ``dot`` program, bounded in time, checked for safety.

``dot`` is run as a subprocess fed on stdin: no temporary files, no network. Its layout
effort explodes on big cyclic graphs (500 nodes and 1,000 random edges take minutes), so past
:data:`BIG_GRAPH` nodes plus edges the effort is capped, and a layout that still exceeds its
time limit is redone by the much cheaper ``sfdp``, then ``neato`` engine.

The SVG is checked before it is returned against one allow-list, :data:`SVG_ALLOW`:
elements and attributes Graphviz draws with, links only within the drawing (``#id``), no
``…script:`` value. Anything else (``<script>``, ``on*=`` handlers, ``style``, outside links)
is refused: we never give Graphviz a URL, so such a thing would mean a bug, and a notebook
output must not turn it into code. The live views' browser code scrubs SVG with the same
list, sent to it by the widget (it removes what the list does not name). Then each
``<title>`` (the browser's hover text) gets the node's name instead of its DOT name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Mapping

from agentnb.errors import MissingDependency, RenderError
from agentnb.render.dot import display_text, dot_names, to_dot
from agentnb.render.model import Diagram

__all__ = [
    "BIG_GRAPH",
    "FORMATS",
    "SVG_ALLOW",
    "RenderError",
    "check_svg",
    "find_dot",
    "missing_dot",
    "render",
    "render_svg",
    "run_graphviz",
]

BIG_GRAPH = 400
"""Nodes plus edges above which ``dot``'s layout effort is capped."""
# Measured with dot 2.43 on 500 nodes and 1,000 random cyclic edges: 200+ s uncapped; 7 s
# with nslimit=1, nearly all of it in the x-coordinate network simplex over ~68,000 virtual
# nodes; 0.6 s with nslimit=0.001 (no simplex iterations: a feasible, less compact layout).
# Layered graphs of the same size take 0.1 s either way, so the cap costs little there.
CAPPED = ("-Gmclimit=0.1", "-Gnslimit=0.001", "-Gnslimit1=1", "-Gsplines=line")
TIMEOUT = 10.0
"""Seconds one layout may take before the next, cheaper engine is tried."""
FALLBACK_ENGINES = ("sfdp", "neato")
FORMATS = ("svg", "png", "pdf")
"""Output formats :func:`render` produces."""

# Every element Graphviz's SVG output uses for our drawings; anything else is refused.
_SVG_TAGS = frozenset(
    {
        "svg", "g", "title", "text", "tspan", "path", "polygon", "polyline", "ellipse",
        "circle", "rect", "line", "a", "defs", "lineargradient", "radialgradient", "stop",
    }
)  # fmt: skip
# Every attribute those elements carry in Graphviz's output (dot and viz.js): geometry,
# paint, text, ids and classes. Names without namespace, lowercased. "href" (also
# xlink:href) must point inside the drawing; no value may hold a "…script:" URL.
_SVG_ATTRIBUTES = frozenset(
    {
        "id", "class", "width", "height", "viewbox", "preserveaspectratio", "version",
        "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy", "d",
        "points", "transform", "fill", "fill-opacity", "fill-rule", "stroke",
        "stroke-width", "stroke-dasharray", "stroke-dashoffset", "stroke-opacity",
        "stroke-linecap", "stroke-linejoin", "stroke-miterlimit", "opacity", "font-family",
        "font-size", "font-weight", "font-style", "font-variant", "font-stretch",
        "text-anchor", "text-decoration", "baseline-shift", "dominant-baseline", "offset",
        "stop-color", "stop-opacity", "gradientunits", "gradienttransform", "href", "title",
        "target", "space",
    }
)  # fmt: skip
_LINK_ATTRIBUTES = frozenset({"href"})
SVG_ALLOW: dict[str, list[str]] = {
    "elements": sorted(_SVG_TAGS),
    "attributes": sorted(_SVG_ATTRIBUTES),
    "links": sorted(_LINK_ATTRIBUTES),
}
"""The one SVG allow-list: :func:`check_svg` refuses, and the live views' browser code
(``widgets/static/live.js``, which receives this as the ``_svg_allow`` trait) removes,
every element and attribute it does not name; a link attribute must start with ``#``."""
_TITLE = re.compile(r"<title>([^<]*)</title>")
_SCRIPTY = re.compile(r"(?:java|vb)script:", re.IGNORECASE)
_SVG_TAG_BYTES = frozenset(tag.encode() for tag in _SVG_TAGS)
_FOLD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ\t\n\r\f\v", b"abcdefghijklmnopqrstuvwxyz     ")
_START_TAG = re.compile(rb"<([a-z][\w:.-]*)")
_ON_ATTR = re.compile(rb"on[^\s=>/]*\s*=")
_ATTR_NAME = re.compile(rb"\s([a-z_][\w:.-]*)\s*=")
_SVG_ATTR_BYTES = frozenset(name.encode() for name in _SVG_ATTRIBUTES)
_DECLARATIONS = frozenset({b"xmlns", b"encoding", b"standalone"})  # not attributes that act


def find_dot() -> str | None:
    """Path of the ``dot`` program, or ``None`` when Graphviz is not installed."""
    return shutil.which("dot")


def missing_dot(purpose: str) -> MissingDependency:
    """The error for a missing ``dot`` program, with install commands that actually work."""
    return MissingDependency(
        "Graphviz (the dot program)",
        "notebook",
        purpose,
        install="apt-get install graphviz (Debian/Ubuntu), brew install graphviz (macOS) or "
        "conda install graphviz. Exporting .dot text needs no Graphviz",
    )


def run_graphviz(
    dot_text: str,
    fmt: str = "svg",
    *,
    size: int = 0,
    timeout: float = TIMEOUT,
    dot: str | None = None,
) -> bytes:
    """Lay out and draw ``dot_text``; return the bytes ``dot -T<fmt>`` prints.

    Args:
        dot_text: the graph in DOT.
        fmt: ``svg``, ``png`` or ``pdf``.
        size: nodes plus edges; above :data:`BIG_GRAPH` the layout effort is capped.
        timeout: seconds per attempt; on expiry the next engine (sfdp, neato) is tried.
        dot: path of the ``dot`` program; found on PATH when omitted.

    Raises:
        MissingDependency: Graphviz is not installed.
        RenderError: every engine failed or ran out of time.
    """
    if fmt not in FORMATS:
        raise RenderError(f"unknown format {fmt!r}", fix=f"Use one of {', '.join(FORMATS)}")
    program = dot or find_dot()
    if program is None:
        raise missing_dot(f"drawing diagrams as {fmt.upper()}")
    source = dot_text.encode("utf-8")
    first = [program, f"-T{fmt}", *(CAPPED if size > BIG_GRAPH else ())]
    attempts = [first] + [[program, f"-K{engine}", f"-T{fmt}"] for engine in FALLBACK_ENGINES]
    timed_out: list[str] = []
    for argv in attempts:
        try:
            done = subprocess.run(argv, input=source, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out.append(" ".join(argv[1:]))
            continue
        except OSError as exc:
            raise RenderError(f"could not run {program}", str(exc)) from exc
        if done.returncode != 0:
            raise RenderError(
                f"{program} exited with status {done.returncode}",
                done.stderr.decode("utf-8", "replace"),
            )
        return done.stdout
    raise RenderError(
        f"Graphviz did not finish within {timeout:g} s (tried {'; '.join(timed_out)})",
        fix="The graph is too big to lay out in time: draw a part of it, or pass a larger timeout",
    )


def _looks_inert(svg: bytes) -> bool:
    """A cheap scan: True only when nothing in ``svg`` can be a script, handler or link.

    Every executable construct in SVG needs an element outside :data:`_SVG_TAGS`, an
    ``on*=`` attribute, an ``href``, a ``style`` or a ``…script:`` URL; none of them can
    hide from a case-insensitive look for those words, since attribute and element names
    cannot be written as entities. A hit (user text may say "script") means a full check.
    """
    # HTML parsers (innerHTML) lowercase names, so this check ignores case; whitespace
    # becomes spaces so that one search finds every attribute that starts with "on".
    low = svg.translate(_FOLD)
    if b"href" in low or b"style" in low or b"script" in low:
        return False
    tags = {tag.rsplit(b":", 1)[-1] for tag in set(_START_TAG.findall(low))}
    if not tags <= _SVG_TAG_BYTES:
        return False
    # Text that merely looks like name= (a label "amount=5") only costs the full check.
    for name in set(_ATTR_NAME.findall(low)):
        local = name.rsplit(b":", 1)[-1]
        if local not in _SVG_ATTR_BYTES and name.split(b":", 1)[0] not in _DECLARATIONS:
            return False
    at = low.find(b" on")
    while at != -1:
        if _ON_ATTR.match(low, at + 1):
            return False
        at = low.find(b" on", at + 1)
    return True


def check_svg(svg: str | bytes) -> None:
    """Refuse SVG with anything :data:`SVG_ALLOW` does not name, or a link or script URL.

    Not a validator: SVG that passes the cheap scan is not parsed (a 500-node drawing
    would spend more time in the parser than ``dot`` spends laying out small graphs).

    Raises:
        RenderError: the SVG holds something executable, or is suspect and does not parse.
    """
    if _looks_inert(svg if isinstance(svg, bytes) else svg.encode("utf-8", "surrogatepass")):
        return
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        raise RenderError("Graphviz produced SVG that does not parse", str(exc)) from exc
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1].lower()
        if tag not in _SVG_TAGS:
            raise RenderError("Graphviz produced SVG with an unexpected element", f"<{tag}>")
        for attr, value in element.attrib.items():
            name = attr.rsplit("}", 1)[-1].lower()
            flat = "".join(value.split())
            if (
                name not in _SVG_ATTRIBUTES
                or _SCRIPTY.search(flat)
                or (name in _LINK_ATTRIBUTES and not value.startswith("#"))
            ):
                raise RenderError("Graphviz produced SVG with an active attribute", name)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _titles(diagram: Diagram) -> dict[str, str]:
    """Graphviz's ``<title>`` texts (the generated names) -> the names people know."""
    names = dot_names(diagram)
    titles = {"agentnb": _xml(display_text(diagram.title or "workflow"))}
    for node in diagram.nodes:
        text = node.id if not node.description else f"{node.id}\n{node.description}"
        titles[names[node.id]] = _xml(display_text(text))
    for edge in diagram.edges:
        key = f"{names[edge.source]}&#45;&gt;{names[edge.target]}"
        titles.setdefault(key, _xml(display_text(f"{edge.source} → {edge.target}")))
    return titles


def _retitle(svg: str, titles: Mapping[str, str]) -> str:
    # Hover text in browsers: show names, not n0/n1. User text in the SVG is escaped, so a
    # literal <title> is always Graphviz's own element.
    return _TITLE.sub(lambda m: f"<title>{titles.get(m.group(1), m.group(1))}</title>", svg)


def render_svg(
    diagram: Diagram,
    *,
    id_prefix: str = "",
    timeout: float = TIMEOUT,
    dot: str | None = None,
) -> str:
    """The diagram as checked SVG text, node and edge titles set to their names.

    Raises:
        MissingDependency: Graphviz is not installed.
        RenderError: Graphviz failed.

    Example:
        >>> from agentnb import StateGraph
        >>> graph = (
        ...     StateGraph("refund")
        ...     .add_node("plan", lambda state: {})
        ...     .add_node("pay", lambda state: {})
        ...     .add_edge("plan", "pay")
        ...     .set_entry_point("plan")
        ...     .add_interrupt_before("pay")
        ... )
        >>> from agentnb.render import diagram_for, render_svg
        >>> svg = render_svg(diagram_for(graph))  # runs Graphviz's dot
        >>> "<svg" in svg, "<title>pay</title>" in svg
        (True, True)
    """
    size = len(diagram.nodes) + len(diagram.edges)
    raw = run_graphviz(
        to_dot(diagram, id_prefix=id_prefix), "svg", size=size, timeout=timeout, dot=dot
    )
    check_svg(raw)
    return _retitle(raw.decode("utf-8"), _titles(diagram))


def render(
    diagram: Diagram,
    fmt: str,
    *,
    timeout: float = TIMEOUT,
) -> bytes:
    """The diagram in ``fmt`` (``svg``, ``png``, ``pdf`` or ``dot``) as bytes."""
    if fmt == "dot":
        return to_dot(diagram).encode("utf-8")
    if fmt == "svg":
        return render_svg(diagram, timeout=timeout).encode("utf-8")
    size = len(diagram.nodes) + len(diagram.edges)
    return run_graphviz(to_dot(diagram), fmt, size=size, timeout=timeout)
