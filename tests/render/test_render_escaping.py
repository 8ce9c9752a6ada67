"""Property: whatever the names, the SVG draws exactly them, and nothing in it can run."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from render_graphs import as_drawn, decode, parse_svg

from agentnb.graph.builder import END, RESERVED, StateGraph
from agentnb.render.dot import display_text, dom_id, node_text
from agentnb.render.extract import diagram_from_graph
from agentnb.render.svg import render_svg

# Pieces that have broken DOT or SVG writers before: quoting, Graphviz escapes, HTML-like
# label syntax, XML entities, record-label syntax, line breaks, bidi and zero-width marks.
TRICKY = [
    '"', "'", "\\", "\\N", "\\G", "\\E", "\\L", "\\l", "\\n", "{", "}", "[", "]", "|",
    "<", ">", "&", "&amp;", "&#60;", "<BR/>", "<script>", "]]>", "<!--", "\n", "\r", "\t",
    " ", "  ", "\xa0", "javascript:", "onload=", "%", "~", "-", "->", "é", "日本",
    "\U0001f600", "\u202e", "\u200b", "\x00", "\x7f", "\ud800", "\ufffe",
]  # fmt: skip

pieces = st.one_of(st.sampled_from(TRICKY), st.characters(exclude_categories=("Cs",)))
names = (
    st.lists(pieces, min_size=1, max_size=6)
    .map("".join)
    .filter(lambda s: s.strip() != "" and s not in RESERVED)
)


@st.composite
def graphs(draw: st.DrawFn) -> StateGraph:
    """A few nodes with drawn names; the first branches to the others with drawn outcomes."""
    nodes = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    g = StateGraph("g")
    for name in nodes:
        g.add_node(name, lambda s: None)
    g.set_entry_point(nodes[0])
    if len(nodes) > 1:
        outcomes = draw(st.lists(names, min_size=len(nodes) - 1, max_size=len(nodes) - 1))
        g.add_conditional_edge(nodes[0], lambda s: "", dict(zip(outcomes, nodes[1:], strict=True)))
        for name in nodes[1:]:
            g.add_edge(name, END)
    if draw(st.booleans()):
        g.add_interrupt_before(nodes[-1])
    return g


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_svg_draws_every_name_literally_and_nothing_active(graph: StateGraph) -> None:
    diagram = diagram_from_graph(graph, legend=False)
    svg = render_svg(diagram)
    drawn = parse_svg(svg)

    expected_nodes = {n.id: as_drawn(display_text(node_text(n))) for n in diagram.nodes}
    assert {name: text for name, (text, _, _) in drawn.nodes.items()} == expected_nodes
    assert all(n == 1 for n in drawn.node_count.values())
    titles = {name: title for name, (_, _, title) in drawn.nodes.items()}
    assert titles == {n.id: display_text(n.id) for n in diagram.nodes}

    expected_edges = {
        (e.source, e.target): as_drawn(display_text(e.text or "")) for e in diagram.edges
    }
    assert {key: text for key, (text, _) in drawn.edges.items()} == expected_edges

    assert "<script" not in svg.lower()
    for element in ET.fromstring(svg).iter():
        for attr, value in element.attrib.items():
            local = attr.rsplit("}", 1)[-1].lower()
            assert not local.startswith("on"), (attr, value)
            if local == "href":
                assert "javascript:" not in re.sub(r"\s", "", value).lower()


@settings(max_examples=200, deadline=None)
@given(names)
def test_display_text_is_valid_xml_and_ids_decode_back(name: str) -> None:
    shown = display_text(name)
    assert ET.fromstring(f"<t>{escape(shown)}</t>").text == shown
    if name.isprintable():
        assert shown == name
    assert decode(dom_id(name)) == name
