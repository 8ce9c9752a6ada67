"""Writing a :class:`~agentnb.fsm.chart.Statechart` as SCXML (``chart.to_scxml()``).

Everything a chart holds as data is written: states, parallel and final states, history,
initial children, transitions (event, cond, target, type), executable content, the
datamodel and donedata. A Python function (a guard or an action given in code) has no
SCXML form: it is refused with :class:`~agentnb.errors.DefinitionError` naming it, rather
than dropped. ``load_scxml(chart.to_scxml())`` gives back a chart that behaves the same.
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import quoteattr

from agentnb.errors import DefinitionError
from agentnb.fsm.chart import ChartTransition, Node, Statechart
from agentnb.fsm.content import (
    Assign,
    Call,
    Cancel,
    Content,
    DoneData,
    Foreach,
    If,
    Invoke,
    Log,
    Raise,
    Send,
)
from agentnb.fsm.expressions import Expression

__all__ = ["write_scxml"]

NS = "http://www.w3.org/2005/07/scxml"


def _attrs(**values: Any) -> str:
    return "".join(
        f" {key.rstrip('_')}={quoteattr(str(value))}"
        for key, value in values.items()
        if value is not None and value != ""
    )


def _literal(value: Any) -> str:
    """A Python literal the safe evaluator reads back (JSON spelling of the constants)."""
    return json.dumps(value, ensure_ascii=False) if value is not None else "None"


def _text(expr: Expression | None) -> str | None:
    return None if expr is None else expr.text


class _Writer:
    def __init__(self, chart: Statechart) -> None:
        self.chart = chart
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def refuse(self, what: str) -> DefinitionError:
        return DefinitionError(
            f"{what} is Python code, which SCXML cannot hold",
            culprit=what,
            fix="Use an expression string for guards and Raise/Send/Assign/Log for actions",
        )

    def document(self) -> str:
        root = self.chart.root
        assert root.initial is not None
        self.emit(
            0,
            f"<scxml{_attrs(xmlns=NS, version='1.0', datamodel='python', name=self.chart.name)}"
            f"{_attrs(initial=' '.join(root.initial.targets))}"
            f"{_attrs(binding=None if self.chart.binding == 'early' else 'late')}>",
        )
        self.datamodel(root, 1)
        for child in root.children:
            self.state(child, 1)
        self.emit(0, "</scxml>")
        return "\n".join(self.lines) + "\n"

    def datamodel(self, node: Node, depth: int) -> None:
        if not node.data:
            return
        self.emit(depth, "<datamodel>")
        for key, expr, literal in node.data:
            text = expr.text if expr is not None else _literal(literal)
            self.emit(depth + 1, f"<data{_attrs(id=key, expr=text)}/>")
        self.emit(depth, "</datamodel>")

    def state(self, node: Node, depth: int) -> None:
        if node.kind == "history":
            self.emit(
                depth, f"<history{_attrs(id=node.id, type='deep' if node.deep else 'shallow')}>"
            )
            if node.initial is not None:
                self.transition(node.initial, depth + 1)
            self.emit(depth, "</history>")
            return
        tag = node.kind
        initial = ""
        if node.kind == "state" and node.initial is not None and node.child_states:
            initial = _attrs(initial=" ".join(node.initial.targets))
        self.emit(depth, f"<{tag}{_attrs(id=node.id)}{initial}>")
        if node.kind == "state" and node.initial is not None and node.initial.content:
            raise self.refuse(f"the initial transition content of {node.id!r}")
        self.datamodel(node, depth + 1)
        for kind, blocks in (("onentry", node.onentry), ("onexit", node.onexit)):
            for block in blocks:
                self.emit(depth + 1, f"<{kind}>")
                self.block(block, depth + 2)
                self.emit(depth + 1, f"</{kind}>")
        if node.donedata is not None:
            self.donedata(node, depth + 1)
        for t in node.transitions:
            self.transition(t, depth + 1)
        for invoke in node.invokes:
            self.invoke(invoke, depth + 1)
        for child in node.children:
            self.state(child, depth + 1)
        self.emit(depth, f"</{tag}>")

    def invoke(self, item: Invoke, depth: int) -> None:
        attrs = _attrs(
            id=item.id,
            idlocation=None if item.idlocation is None else item.idlocation.text,
            typeexpr=_text(item.typeexpr),
            autoforward="true" if item.autoforward else None,
            namelist=" ".join(name for name, _ in item.namelist),
        )
        self.emit(depth, f"<invoke{attrs}>")
        for key, expr in item.params:
            self.emit(depth + 1, f"<param{_attrs(name=key, expr=expr.text)}/>")
        if item.finalize:
            self.emit(depth + 1, "<finalize>")
            self.block(item.finalize, depth + 2)
            self.emit(depth + 1, "</finalize>")
        self.emit(depth + 1, "<content>")
        for line in _Writer(item.chart).document().splitlines():
            self.emit(depth + 2, line)
        self.emit(depth + 1, "</content>")
        self.emit(depth, "</invoke>")

    def donedata(self, node: Node, depth: int) -> None:
        done = node.donedata
        self.emit(depth, "<donedata>")
        if isinstance(done, DoneData):
            for key, expr, location in done.params:
                source = expr.text if expr is not None else getattr(location, "text", "")
                self.emit(depth + 1, f"<param{_attrs(name=key, expr=source)}/>")
            if done.content is not None:
                self.emit(depth + 1, f"<content{_attrs(expr=done.content.text)}/>")
            elif not done.params and done.literal is not None:
                self.emit(depth + 1, f"<content{_attrs(expr=_literal(done.literal))}/>")
        else:
            self.emit(depth + 1, f"<content{_attrs(expr=_literal(done))}/>")
        self.emit(depth, "</donedata>")

    def transition(self, t: ChartTransition, depth: int) -> None:
        cond = None
        if t.cond is not None:
            if t.cond.expr is None:
                raise self.refuse(f"guard {t.cond.text!r} of {t!r}")
            cond = t.cond.expr.text
        attrs = _attrs(
            event=" ".join(t.events),
            cond=cond,
            target=" ".join(t.targets),
            type="internal" if t.internal else None,
        )
        if not t.content:
            self.emit(depth, f"<transition{attrs}/>")
            return
        self.emit(depth, f"<transition{attrs}>")
        self.block(t.content, depth + 1)
        self.emit(depth, "</transition>")

    def block(self, block: tuple[Content, ...], depth: int) -> None:
        for item in block:
            self.content(item, depth)

    def content(self, item: Content, depth: int) -> None:
        if isinstance(item, Call):
            raise self.refuse(f"action {getattr(item.fn, '__name__', item.fn)!r}")
        if isinstance(item, Raise):
            self.emit(depth, f"<raise{_attrs(event=item.event)}/>")
        elif isinstance(item, Log):
            self.emit(depth, f"<log{_attrs(label=item.label, expr=_text(item.expr))}/>")
        elif isinstance(item, Assign):
            expr = _text(item.expr) if item.expr is not None else _literal(item.value)
            self.emit(depth, f"<assign{_attrs(location=item.location.text, expr=expr)}/>")
        elif isinstance(item, Cancel):
            self.emit(
                depth, f"<cancel{_attrs(sendid=item.sendid, sendidexpr=_text(item.sendidexpr))}/>"
            )
        elif isinstance(item, Send):
            self.send(item, depth)
        elif isinstance(item, If):
            for number, (cond, body) in enumerate(item.branches):
                if number == 0:
                    self.emit(depth, f"<if{_attrs(cond=_text(cond))}>")
                elif cond is not None:
                    self.emit(depth + 1, f"<elseif{_attrs(cond=cond.text)}/>")
                else:
                    self.emit(depth + 1, "<else/>")
                self.block(body, depth + 1)
            self.emit(depth, "</if>")
        elif isinstance(item, Foreach):
            index = None if item.index is None else item.index.text
            self.emit(
                depth,
                f"<foreach{_attrs(array=item.array.text, item=item.item.text, index=index)}>",
            )
            self.block(item.body, depth + 1)
            self.emit(depth, "</foreach>")
        else:
            raise self.refuse(f"content {item!r}")

    def send(self, item: Send, depth: int) -> None:
        delay = item.delay
        attrs = _attrs(
            event=item.event,
            eventexpr=_text(item.eventexpr),
            target=item.target,
            targetexpr=_text(item.targetexpr),
            type_=item.type,
            typeexpr=_text(item.typeexpr),
            id=item.id,
            idlocation=None if item.idlocation is None else item.idlocation.text,
            delay=(f"{delay:g}s" if isinstance(delay, int | float) and delay else delay) or None,
            delayexpr=_text(item.delayexpr),
            namelist=" ".join(name for name, _ in item.namelist),
        )
        children: list[str] = [
            f"<param{_attrs(name=key, expr=expr.text)}/>" for key, expr in item.params
        ]
        if item.content is not None:
            children.append(f"<content{_attrs(expr=_text(item.content))}/>")
        elif item.data is not None and not item.params:
            children.append(f"<content{_attrs(expr=_literal(item.data))}/>")
        if not children:
            self.emit(depth, f"<send{attrs}/>")
            return
        self.emit(depth, f"<send{attrs}>")
        for child in children:
            self.emit(depth + 1, child)
        self.emit(depth, "</send>")


def write_scxml(chart: Statechart) -> str:
    """The SCXML text of ``chart``.

    Raises:
        DefinitionError: the chart holds a Python function (guard or action).
    """
    return _Writer(chart).document()
