"""The SCXML file as a small element tree with line numbers, parsed safely with expat.

Every DTD is refused — no entities, internal or external — so nothing is expanded and no
file or URL is read; an element of another namespace is refused by name. Line numbers
stay with each element so every later refusal can say where.
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass, field
from typing import Any

from agentnb.errors import ScxmlError, UnsupportedElement

__all__ = ["NS", "Element", "parse_xml"]

NS = "http://www.w3.org/2005/07/scxml"
MAX_CHARS = 2_000_000
"""Longer documents are refused unread: a chart is a few kilobytes."""
MAX_DEPTH = 100
"""Deeper element nesting is refused while parsing, before anything recurses into it."""
MAX_ELEMENTS = 50_000


@dataclass
class Element:
    """One XML element: its local name, attributes, line, children and text."""

    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Element] = field(default_factory=list)
    text: str = ""


def parse_xml(text: str, source: str | None) -> Element:
    """The document's root element (``<scxml>``), or a typed refusal saying where."""
    if len(text) > MAX_CHARS:
        raise ScxmlError(
            f"the document has {len(text):,} characters, more than {MAX_CHARS:,}",
            line=None,
            source=source,
            fix="Split it, or check that this is the file you meant",
        )
    count = [0]
    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
    stack: list[Element] = []
    root: list[Element] = []

    def refuse_dtd(*_: Any) -> None:
        raise UnsupportedElement(
            "DOCTYPE",
            line=parser.CurrentLineNumber,
            source=source,
            detail="a DOCTYPE or entity declaration is not allowed in an SCXML file",
        )

    def start(name: str, attrs: dict[str, str]) -> None:
        ns, _, local = name.rpartition(" ")
        if ns and ns != NS:
            raise UnsupportedElement(
                local,
                line=parser.CurrentLineNumber,
                source=source,
                detail=f"<{local}> of namespace {ns!r} is not an SCXML element",
            )
        plain = {
            k.rpartition(" ")[2]: v for k, v in attrs.items() if " " not in k or k.startswith(NS)
        }
        element = Element(local, plain, parser.CurrentLineNumber)
        count[0] += 1
        if len(stack) >= MAX_DEPTH or count[0] > MAX_ELEMENTS:
            what = f"nested deeper than {MAX_DEPTH}" if len(stack) >= MAX_DEPTH else "too large"
            raise ScxmlError(
                f"the document is {what} (at <{local}>)",
                line=parser.CurrentLineNumber,
                source=source,
                fix=f"Keep it under {MAX_DEPTH} levels and {MAX_ELEMENTS:,} elements",
            )
        if stack:
            stack[-1].children.append(element)
        else:
            root.append(element)
        stack.append(element)

    def end(name: str) -> None:
        stack.pop()

    def chars(data: str) -> None:
        if stack:
            stack[-1].text += data

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.ExternalEntityRefHandler = refuse_dtd  # type: ignore[assignment]
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as exc:
        raise ScxmlError(f"not well-formed XML: {exc}", line=exc.lineno, source=source) from None
    if not root or root[0].tag != "scxml":
        raise ScxmlError("the root element must be <scxml>", line=1, source=source)
    return root[0]
