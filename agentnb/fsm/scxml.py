"""Reading SCXML documents: :func:`load_scxml` builds a :class:`~agentnb.fsm.chart.Statechart`.

The document is parsed with the standard library's expat parser, with every DTD refused
(no entities, external or internal, so no "billion laughs" and no file reads). Every element
is either understood or refused with :class:`~agentnb.errors.UnsupportedElement` naming it
and its line — ``<script>``, ``<data src>``, ``<invoke src>`` (a child document from a file
or URL), a ``<send>`` over HTTP or to a non-SCXML processor, an element of another
namespace — never skipped. ``<invoke>`` of an inline ``<scxml>`` child runs as a child
session (:mod:`agentnb.fsm.invocations`); ``<send>`` reaches this session, its parent
(``#_parent``), its children (``#_<invokeid>``) or any of them by ``#_scxml_<sessionid>``.
Expressions are kept as text and evaluated by the safe evaluator
(:mod:`agentnb.fsm.expressions`); one that does not parse
fails when it runs, as ``error.execution``, as the standard requires.

Example:
    >>> chart = load_scxml('''
    ... <scxml xmlns="http://www.w3.org/2005/07/scxml" initial="a" name="ab">
    ...   <state id="a"><transition event="go" target="b"/></state>
    ...   <final id="b"/>
    ... </scxml>''')
    >>> chart.start().send("go").target
    'b'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agentnb.errors import DefinitionError, ScxmlError, UnsupportedElement
from agentnb.fsm.chart import Statechart
from agentnb.fsm.content import (
    SCXML_PROCESSOR,
    Assign,
    Cancel,
    Content,
    DoneData,
    Foreach,
    If,
    Invoke,
    Log,
    Raise,
    Send,
    parse_delay,
)
from agentnb.fsm.expressions import Expression, ExpressionError, Location
from agentnb.fsm.nodes import ChartTransition, Condition, Node
from agentnb.fsm.scxml_xml import Element, parse_xml

__all__ = ["load_scxml"]

_STATES = {"state", "parallel", "final", "history"}
_EXECUTABLE = {"raise", "send", "cancel", "log", "assign", "if", "foreach", "script"}
_SEND_TYPES = {None, SCXML_PROCESSOR, "scxml"}


def load_scxml(document: str | os.PathLike[str]) -> Statechart:
    """A statechart from an SCXML file path or document text.

    Raises:
        ScxmlError: the document is not well-formed, or an attribute is missing or wrong.
        UnsupportedElement: an element agentnb does not run (named, with its line).

    Example:
        >>> from agentnb import load_scxml
        >>> chart = load_scxml('''
        ... <scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" name="door" initial="shut">
        ...   <state id="shut"><transition event="open" target="ajar"/></state>
        ...   <state id="ajar"><transition event="close" target="shut"/></state>
        ... </scxml>
        ... ''')
        >>> door = chart.start()
        >>> door.send("open").target
        'ajar'
    """
    source: str | None = None
    if isinstance(document, os.PathLike) or not str(document).lstrip().startswith("<"):
        path = Path(document)
        source = str(path)
        text = path.read_text(encoding="utf-8")
    else:
        text = str(document)
    return _Reader(source).chart(parse_xml(text, source))


INVOKE_TYPES = {
    "scxml",
    "http://www.w3.org/TR/scxml/",
    "http://www.w3.org/TR/scxml",
    SCXML_PROCESSOR,
}


def _other_session(target: str) -> bool:
    """A target outside this tree of SCXML sessions: a URL (refused)."""
    if target.startswith("#_"):
        return False  # this session, its parent, an invoked child, or an SCXML session id
    return "://" in target or target.startswith(("#", "http:", "https:"))


class _Reader:
    def __init__(self, source: str | None) -> None:
        self.source = source
        self.anonymous = 0

    def fail(self, el: Element, problem: str) -> ScxmlError:
        return ScxmlError(f"<{el.tag}>: {problem}", line=el.line, source=self.source)

    def refuse(self, el: Element, detail: str = "") -> UnsupportedElement:
        return UnsupportedElement(el.tag, line=el.line, source=self.source, detail=detail)

    def chart(self, el: Element) -> Statechart:
        root = Node("#root", "scxml", line=el.line)
        binding = el.attrs.get("binding", "early")
        if binding not in ("early", "late"):
            raise self.fail(el, f"binding={binding!r} must be 'early' or 'late'")
        for child in el.children:
            if child.tag in _STATES:
                root.children.append(self.state(child, root))
            elif child.tag == "datamodel":
                root.data.extend(self.datamodel(child))
            elif child.tag == "script":
                raise self.refuse(child)
            else:
                raise self.refuse(child, f"<{child.tag}> is not supported inside <scxml>")
        initial = el.attrs.get("initial", "").split()
        if not initial:
            states = root.child_states
            if not states:
                raise self.fail(el, "the document has no states")
            initial = [states[0].id]
        root.initial = ChartTransition(root, (), tuple(initial), line=el.line)
        try:
            chart = Statechart(el.attrs.get("name", "scxml"), root=root)
        except DefinitionError as exc:
            raise ScxmlError(exc.problem, line=None, source=self.source, fix=exc.fix) from None
        chart.binding = binding
        return chart

    def state(self, el: Element, parent: Node) -> Node:
        kind = el.tag
        sid = el.attrs.get("id")
        if not sid:
            self.anonymous += 1
            sid = f"_{kind}{self.anonymous}"
        node = Node(sid, kind, parent, line=el.line)
        if kind == "history":
            node.deep = el.attrs.get("type", "shallow") == "deep"
            for child in el.children:
                if child.tag != "transition":
                    raise self.refuse(child, f"<{child.tag}> is not supported inside <history>")
                node.initial = self.transition(child, node)
            return node
        for child in el.children:
            tag = child.tag
            if tag in _STATES and kind != "final":
                node.children.append(self.state(child, node))
            elif tag == "transition" and kind != "final":
                node.transitions.append(self.transition(child, node))
            elif tag == "onentry":
                node.onentry.append(self.block(child))
            elif tag == "onexit":
                node.onexit.append(self.block(child))
            elif tag == "initial" and kind == "state":
                for t in child.children:
                    if t.tag != "transition":
                        raise self.refuse(t, f"<{t.tag}> is not supported inside <initial>")
                    node.initial = self.transition(t, node)
            elif tag == "datamodel":
                node.data.extend(self.datamodel(child))
            elif tag == "donedata" and kind == "final":
                node.donedata = self.donedata(child)
            elif tag == "invoke" and kind != "final":
                node.invokes.append(self.invoke(child))
            elif tag in ("invoke", "script"):
                raise self.refuse(child)
            else:
                raise self.refuse(child, f"<{tag}> is not supported inside <{kind}>")
        if kind == "state" and node.child_states and node.initial is None:
            first = el.attrs.get("initial", "").split() or [node.child_states[0].id]
            node.initial = ChartTransition(node, (), tuple(first), line=el.line)
        return node

    def transition(self, el: Element, source: Node) -> ChartTransition:
        cond = el.attrs.get("cond")
        kind = el.attrs.get("type", "external")
        if kind not in ("internal", "external"):
            raise self.fail(el, f"type={kind!r} must be 'internal' or 'external'")
        return ChartTransition(
            source,
            tuple(el.attrs.get("event", "").split()),
            tuple(el.attrs.get("target", "").split()),
            cond=None if cond is None or not cond.strip() else Condition(self.expr(cond)),
            internal=kind == "internal",
            content=self.block(el),
            line=el.line,
        )

    # -- data -----------------------------------------------------------------------------

    def expr(self, text: str) -> Expression:
        return Expression(text, lenient=True)

    def location(self, el: Element, text: str) -> Location:
        return Location(text, lenient=True)

    def literal(self, text: str) -> Any:
        """Inline content: a Python literal if it reads as one, else the normalised text."""
        stripped = text.strip()
        if not stripped:
            return None
        try:
            return Expression(stripped).evaluate({}, lambda _: False)
        except ExpressionError:
            return " ".join(stripped.split())

    def datamodel(self, el: Element) -> list[tuple[str, Expression | None, Any]]:
        items: list[tuple[str, Expression | None, Any]] = []
        for data in el.children:
            if data.tag != "data":
                raise self.refuse(data, f"<{data.tag}> is not supported inside <datamodel>")
            if "src" in data.attrs:
                raise self.refuse(
                    data, "<data src> (loading data from a URL or file) is not supported"
                )
            if data.children:
                raise self.refuse(data.children[0], "XML content inside <data> is not supported")
            key = data.attrs.get("id")
            if not key:
                raise self.fail(data, "id is required")
            expr = data.attrs.get("expr")
            items.append((key, None if expr is None else self.expr(expr), self.literal(data.text)))
        return items

    def donedata(self, el: Element) -> DoneData:
        params: list[tuple[str, Expression | None, Location | None]] = []
        content: Expression | None = None
        literal: Any = None
        for child in el.children:
            if child.tag == "param":
                params.append(self.param(child))
            elif child.tag == "content":
                content, literal = self.content(child)
            else:
                raise self.refuse(child, f"<{child.tag}> is not supported inside <donedata>")
        return DoneData(tuple(params), content, literal, line=el.line)

    def param(self, el: Element) -> tuple[str, Expression | None, Location | None]:
        name = el.attrs.get("name")
        if not name:
            raise self.fail(el, "name is required")
        if "expr" in el.attrs:
            return name, self.expr(el.attrs["expr"]), None
        if "location" in el.attrs:
            return name, None, self.location(el, el.attrs["location"])
        raise self.fail(el, "expr or location is required")

    def content(self, el: Element) -> tuple[Expression | None, Any]:
        if el.children:
            raise self.refuse(el.children[0], "XML inside <content> is not supported")
        if "expr" in el.attrs:
            return self.expr(el.attrs["expr"]), None
        return None, self.literal(el.text)

    def invoke(self, el: Element) -> Invoke:
        """``<invoke>`` of an inline SCXML child; a file or URL source is refused."""
        a = el.attrs
        for key in ("src", "srcexpr"):
            if key in a:
                raise self.refuse(
                    el, f"<invoke {key}>: a child document from a file or URL is not read"
                )
        kind = a.get("type")
        if kind is not None and kind not in INVOKE_TYPES:
            raise self.refuse(el, f"<invoke type={kind!r}>: only SCXML child sessions run")
        chart: Statechart | None = None
        params: list[tuple[str, Expression]] = []
        finalize: tuple[Content, ...] = ()
        for child in el.children:
            if child.tag == "content":
                inner = child.children
                if "expr" in child.attrs or len(inner) != 1 or inner[0].tag != "scxml":
                    raise self.refuse(child, "<invoke> runs only an inline <scxml> in <content>")
                chart = _Reader(self.source).chart(inner[0])
            elif child.tag == "param":
                name, expr, location = self.param(child)
                params.append((name, expr if expr is not None else Expression(location.text)))  # type: ignore[union-attr]
            elif child.tag == "finalize":
                finalize = self.block(child)
            else:
                raise self.refuse(child, f"<{child.tag}> is not supported inside <invoke>")
        if chart is None:
            raise self.fail(el, "an inline <content><scxml>...</scxml></content> is required")
        typeexpr = a.get("typeexpr")
        return Invoke(
            chart,
            id=a.get("id"),
            idlocation=None if "idlocation" not in a else self.location(el, a["idlocation"]),
            typeexpr=None if typeexpr is None else self.expr(typeexpr),
            autoforward=a.get("autoforward", "false") == "true",
            params=tuple(params),
            namelist=tuple((n, self.location(el, n)) for n in a.get("namelist", "").split()),
            finalize=finalize,
            line=el.line,
        )

    # -- executable content ---------------------------------------------------------------

    def block(self, el: Element) -> tuple[Content, ...]:
        return tuple(self.executable(child) for child in el.children)

    def executable(self, el: Element) -> Content:
        tag, a = el.tag, el.attrs
        if tag == "raise":
            if not a.get("event"):
                raise self.fail(el, "event is required")
            return Raise(a["event"], line=el.line)
        if tag == "log":
            expr = a.get("expr")
            return Log(a.get("label", ""), None if expr is None else self.expr(expr), line=el.line)
        if tag == "assign":
            if "location" not in a:
                raise self.fail(el, "location is required")
            if el.children:
                raise self.refuse(el.children[0], "XML inside <assign> is not supported")
            expr = a.get("expr")
            return Assign(
                self.location(el, a["location"]),
                None if expr is None else self.expr(expr),
                None if expr is not None else self.literal(el.text),
                line=el.line,
            )
        if tag == "cancel":
            expr = a.get("sendidexpr")
            return Cancel(a.get("sendid"), None if expr is None else self.expr(expr), line=el.line)
        if tag == "if":
            return self.if_(el)
        if tag == "foreach":
            for key in ("array", "item"):
                if key not in a:
                    raise self.fail(el, f"{key} is required")
            index = a.get("index")
            return Foreach(
                self.expr(a["array"]),
                self.location(el, a["item"]),
                None if index is None else self.location(el, index),
                self.block(el),
                line=el.line,
            )
        if tag == "send":
            return self.send(el)
        raise self.refuse(el)

    def if_(self, el: Element) -> If:
        branches: list[tuple[Expression | None, tuple[Content, ...]]] = []
        cond: Expression | None = self.expr(el.attrs.get("cond", "False"))
        body: list[Content] = []
        for child in el.children:
            if child.tag in ("elseif", "else"):
                branches.append((cond, tuple(body)))
                cond = (
                    self.expr(child.attrs.get("cond", "False")) if child.tag == "elseif" else None
                )
                body = []
            else:
                body.append(self.executable(child))
        branches.append((cond, tuple(body)))
        return If(tuple(branches), line=el.line)

    def send(self, el: Element) -> Send:
        a = el.attrs
        target = a.get("target")
        if target is not None and _other_session(target):
            raise self.refuse(el, f"<send target={target!r}>: only this session can be sent to")
        kind = a.get("type")
        if kind is not None and ("/" in kind or ":" in kind) and kind not in _SEND_TYPES:
            raise self.refuse(
                el, f"<send type={kind!r}>: only the SCXML event processor is supported"
            )
        namelist: list[tuple[str, Location]] = [
            (name, self.location(el, name)) for name in a.get("namelist", "").split()
        ]
        params: list[tuple[str, Expression]] = []
        content: Expression | None = None
        literal: Any = None
        for child in el.children:
            if child.tag == "param":
                name, expr, location = self.param(child)
                params.append((name, expr if expr is not None else Expression(location.text)))  # type: ignore[union-attr]
            elif child.tag == "content":
                content, literal = self.content(child)
            else:
                raise self.refuse(child, f"<{child.tag}> is not supported inside <send>")
        delay: float | str = 0.0
        if "delay" in a:
            try:
                delay = parse_delay(a["delay"])
            except ExpressionError as exc:
                raise self.fail(el, str(exc)) from None
        ex = {
            k: None if a.get(k) is None else self.expr(a[k])
            for k in ("eventexpr", "targetexpr", "typeexpr", "delayexpr")
        }
        if a.get("event") is None and ex["eventexpr"] is None:
            raise self.fail(el, "event or eventexpr is required")
        return Send(
            a.get("event"),
            delay=delay,
            id=a.get("id"),
            data=literal,
            target=target,
            eventexpr=ex["eventexpr"],
            targetexpr=ex["targetexpr"],
            typeexpr=ex["typeexpr"],
            type=kind,
            delayexpr=ex["delayexpr"],
            idlocation=None if "idlocation" not in a else self.location(el, a["idlocation"]),
            namelist=tuple(namelist),
            params=tuple(params),
            content=content,
            line=el.line,
        )
