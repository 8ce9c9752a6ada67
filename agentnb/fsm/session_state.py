"""What a store keeps of a statechart session besides its datamodel, as JSON data.

:func:`dump` writes the configuration, the history values, the states whose data were
initialised (late binding), whether the session still runs, and the invoked child sessions
with their own datamodels; :func:`restore` rebuilds a session from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agentnb.fsm.chart import Statechart
from agentnb.fsm.entry_exit import document_order

if TYPE_CHECKING:
    from agentnb.fsm.interpreter import Session

__all__ = ["dump", "restore", "running"]


def dump(session: Session) -> dict[str, Any]:
    """The algorithm's state besides the datamodel, as JSON data."""
    return {
        "configuration": [n.id for n in sorted(session.configuration, key=document_order)],
        "history": {k: [n.id for n in v] for k, v in session.history.items()},
        "entered": sorted(session.entered_once),
        "running": session.running,
        "sessionid": session.sessionid,
        "children": [
            {
                "invokeid": iid,
                "state": session.invoked[iid][0].id,
                "index": session.invoked[iid][1],
                "session": child.dump(),
                "data": child.data,
            }
            for iid, child in session.children.items()
        ],
        "invoked": {iid: [node.id, index] for iid, (node, index) in session.invoked.items()},
    }


def restore(
    chart: Statechart,
    state: Mapping[str, Any],
    data: dict[str, Any],
    parent: Session | None = None,
    invokeid: str | None = None,
) -> Session:
    """A session that continues from :meth:`dump` and ``data`` (unknown ids raise KeyError)."""
    from agentnb.fsm.interpreter import Session

    session = Session(chart, state.get("sessionid"))
    if parent is not None:
        session.parent, session.invokeid = parent, invokeid
        session.route = (*parent.route, str(invokeid))
    session.invoked = {
        iid: (chart.nodes[sid], index) for iid, (sid, index) in state.get("invoked", {}).items()
    }
    for child in state.get("children", ()):
        node = chart.nodes[child["state"]]
        definition = node.invokes[child["index"]]
        session.children[child["invokeid"]] = restore(
            definition.chart, child["session"], child["data"], session, child["invokeid"]
        )
    session.configuration = {chart.nodes[i] for i in state["configuration"]}
    session.history = {k: [chart.nodes[i] for i in v] for k, v in state["history"].items()}
    session.entered_once = set(state.get("entered", ()))
    session.running = running(chart, state)
    session.data.update(data)
    return session


def running(chart: Statechart, state: Mapping[str, Any]) -> bool:
    """Whether the session still runs. A flat instance stored before migration 13 has only
    its configuration: it has ended when that is a top-level final state."""
    found = state.get("running")
    if found is not None:
        return bool(found)
    nodes = chart.nodes
    return not any(
        (node := nodes.get(i)) is not None and node.kind == "final" and node.parent is chart.root
        for i in state["configuration"]
    )
