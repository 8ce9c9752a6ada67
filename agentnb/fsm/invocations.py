"""``<invoke>``: starting, ending and cancelling the child sessions of a statechart session.

A child is a :class:`~agentnb.fsm.interpreter.Session` of the invoked chart, linked to its
parent: it is started when the invoking state has been entered and the macrostep is over,
its ``done.invoke.<id>`` reaches the parent when it ends, and leaving the invoking state
cancels it (its delayed sends die with it). The whole tree is saved with the parent.
"""

from __future__ import annotations

import copy
import uuid
from typing import TYPE_CHECKING, Any

from agentnb.fsm.content import SCXML_PROCESSOR
from agentnb.fsm.entry_exit import document_order
from agentnb.fsm.expressions import Expression, ExpressionError
from agentnb.fsm.nodes import Node
from agentnb.fsm.trace import new_event

if TYPE_CHECKING:
    from agentnb.fsm.interpreter import Session

__all__ = ["INVOKE_TYPES", "cancel_invokes", "child_done", "invoke", "start_invokes"]

INVOKE_TYPES = frozenset(
    {"scxml", "http://www.w3.org/TR/scxml/", "http://www.w3.org/TR/scxml", SCXML_PROCESSOR}
)


def start_invokes(session: Session) -> None:
    pending, session.to_invoke = sorted(session.to_invoke, key=document_order), []
    for state in pending:
        for index, definition in enumerate(state.invokes):
            invoke(session, state, index, definition)


def invoke(session: Session, state: Node, index: int, definition: Any) -> None:
    invokeid = definition.id or f"{state.id}.{uuid.uuid4().hex[:12]}"
    declared = {key for key, _, _ in definition.chart.root.data}
    try:
        if definition.idlocation is not None:
            session.assign(definition.idlocation, invokeid)
        if definition.typeexpr is not None:
            kind = session.evaluate(definition.typeexpr)
            if kind not in INVOKE_TYPES:
                raise ExpressionError(f"invoke type {kind!r} is not supported")
        values = {name: session.evaluate(expr) for name, expr in definition.params}
        for name, location in definition.namelist:
            values[name] = session.evaluate(Expression(location.text))
    except ExpressionError as exc:
        session.error(f"invoke in {state.id!r}: {exc}")
        return
    child = type(session)(definition.chart)
    child.parent, child.invokeid = session, invokeid
    child.route = (*session.route, invokeid)
    child.data.update({k: copy.deepcopy(v) for k, v in values.items() if k in declared})
    session.children[invokeid] = child
    session.invoked[invokeid] = (state, index)
    child.start()


def child_done(session: Session, child: Session) -> None:
    invokeid = child.invokeid
    assert invokeid is not None
    if session.children.get(invokeid) is child:
        del session.children[invokeid]
        done = new_event(f"done.invoke.{invokeid}", child.final_data, invokeid=invokeid)
        session.external.append(done)


def cancel_invokes(session: Session, state: Node) -> None:
    for invokeid, (node, _) in list(session.invoked.items()):
        if node is state:
            session.children.pop(invokeid, None)
            del session.invoked[invokeid]
