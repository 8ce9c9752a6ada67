"""Correct and wrong solutions of notebook 06's exercises: fan-outs, sends and forms in a store.

Like :mod:`tests.teach.scenarios`, each takes a fresh SQLite checkpointer, does what a student
would do, and returns the keyword arguments for ``grade``.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable
from typing import Any

from agentnb import ConflictingUpdate, NodeContext, Send, SqliteCheckpointer, StateGraph
from tests.teach.scenarios import Scenario

DOCS = ["Otters live in rivers.", "Sea otters float.", "Giant otters are very loud."]


def research(store: SqliteCheckpointer, *, joined: bool) -> dict[str, Any]:
    """The notebook's fan-out with a third branch ``news``, in the join or leading nowhere."""
    g = StateGraph("research", reducers={"notes": operator.add})
    g.add_node("plan", lambda state: {"topic": "otters"})
    for branch in ("web", "papers", "news"):
        g.add_node(branch, lambda state, b=branch: {"notes": [b]})
        g.add_edge("plan", branch)
    g.add_node("write", lambda state: {"report": " / ".join(state["notes"])})
    g.set_entry_point("plan")
    g.add_edge(["web", "papers", "news"] if joined else ["web", "papers"], "write")
    g.compile(checkpointer=store).start({"notes": []}, run_id="research-3").run()
    return {"store": store}


def word_counts(
    store: SqliteCheckpointer, *, reducer: Callable[[Any, Any], Any] | None, skip: int = 0
) -> dict[str, Any]:
    """Count each document's words in a task of its own; ``reducer=None``: no reducer;
    ``skip``: documents this short (in words) return no count."""
    g = StateGraph("words", reducers={} if reducer is None else {"words": reducer})
    g.add_node("split", lambda state: None)
    g.add_node(
        "count", lambda state: {"words": n} if (n := len(state["doc"].split())) > skip else {}
    )
    g.add_node("report", lambda state: {"total": state["words"]})
    g.set_entry_point("split")
    g.add_conditional_edge(
        "split", lambda state: [Send("count", {"doc": d}) for d in state["docs"]], ["count"]
    )
    g.add_edge("count", "report")
    run = g.compile(checkpointer=store).start({"docs": DOCS, "words": 0}, run_id="words")
    with contextlib.suppress(ConflictingUpdate):
        run.run()
    return {"store": store}


def booking(store: SqliteCheckpointer, *, form: bool, run_on: bool = True) -> dict[str, Any]:
    """A node asks for seats and a name (a form), or for the seats alone (not a form)."""
    fields: dict[str, Any] = {"seats": {"type": "integer", "minimum": 1, "maximum": 50}}
    if form:
        fields["name"] = {"type": "string", "minLength": 1}

    def book(state: dict[str, Any], ctx: NodeContext) -> dict[str, Any]:
        schema = {"type": "object", "properties": fields, "required": sorted(fields)}
        answer = ctx.interrupt(
            {"question": "Who is booking, and how many seats?", "schema": schema}
        )
        return {"booking": answer}

    flow = StateGraph("booking").add_node("book", book).set_entry_point("book")
    run = flow.compile(checkpointer=store).start({}, run_id="booking")
    run.run()
    run.respond({"seats": 3, "name": "Ada"} if form else {"seats": 3}, by="ada")
    if run_on:
        run.run()
    return {"store": store}


def outline(
    store: SqliteCheckpointer, *, answer: list[list[str]], steps: int = 100
) -> dict[str, Any]:
    """The panel's graph: ``papers`` has a longer branch than ``web``; stepped to the end."""
    g = StateGraph("outline", reducers={"notes": operator.add})
    g.add_node("plan", lambda state: None)
    g.add_node("web", lambda state: {"notes": ["web"]})
    g.add_node("papers", lambda state: {"notes": ["papers"]})
    g.add_node("cite", lambda state: {"notes": ["cite"]})
    g.add_node("write", lambda state: {"report": " / ".join(state["notes"])})
    g.set_entry_point("plan").add_edge("plan", "web").add_edge("plan", "papers")
    g.add_edge("papers", "cite").add_edge(["web", "cite"], "write")
    run = g.compile(checkpointer=store).start({"notes": []}, run_id="outline")
    while not run.status.finished and steps:
        steps -= 1
        run.step()  # what the panel's Step button does
    return {"run": run, "answer": answer}


def predict(answer: list[list[str]]) -> Scenario:
    return lambda store: outline(store, answer=answer)
