"""One generated graph, built and run in LangGraph and in agentnb: the differential suite's
support (tests/graph/test_langgraph_parity.py).

A :class:`Spec` is plain data: nodes (what each writes, computed from what it reads),
plain edges, joins, conditional edges (a router returning one name, a list of names, or
Sends), interrupts and a recursion limit. :func:`run_langgraph` and :func:`run_agentnb`
build it with the same LangGraph spelling (``StateGraph(TypedDict)`` with ``Annotated``
reducers, ``add_edge``, ``add_conditional_edges``, ``Send``, ``compile(checkpointer=...,
interrupt_before=...)``); ``native=True`` builds it with agentnb's own spellings instead.
Each returns an :class:`Outcome`: the final state, the nodes of each superstep, the error's
class (as a kind both libraries share) and the pauses. :func:`explained` names the
deliberate difference (``DELIBERATE``) that accounts for a disagreement; ``TALLY`` counts
the graphs compared in this process and :func:`summary` words the figure.
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

END_NAME = "__end__"

DRIVES = 20
"""How many times the harness drives each library (a stream, or a ``run()`` after the
approval of the last pause): a graph that pauses on every superstep of a loop stops here,
unfinished, in both."""

DELIBERATE = {
    "held alone": (
        "An interrupt before a node of a parallel superstep holds that task only; the "
        "superstep's other tasks run before the pause"
    ),
}
"""Each kept difference, keyed as the tally counts it, with the README's sentence."""

TALLY: Counter[str] = Counter()
"""This process's graphs, agreed, native (built both ways), native ones that differed,
unexplained and each deliberate difference met (pytest-xdist workers send theirs to the
controller: tests/conftest.py)."""


def marked(current: list[str], new: list[str]) -> list[str]:
    """A custom reducer whose result shows what it was called with (``current`` first)."""
    return [*current, *(f"{v}!" for v in new)]


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    total: Annotated[int, operator.add]
    seen: Annotated[list[str], marked]
    x: int
    item: int


@dataclass(frozen=True)
class NodeSpec:
    name: str
    adds: int  # written to ``total`` (operator.add) when > 0
    writes_x: bool  # ``x`` has no reducer: two writers in one superstep conflict
    writes_seen: bool
    strict: bool  # reads ``state["total"]`` directly (an unset reducer key)


@dataclass(frozen=True)
class RouterSpec:
    source: str
    kind: str  # "one", "list" or "send"
    options: tuple[str, ...]  # node names or END_NAME


@dataclass(frozen=True)
class Spec:
    nodes: tuple[NodeSpec, ...]
    entry: str
    edges: tuple[tuple[str, str], ...]
    joins: tuple[tuple[tuple[str, ...], str], ...]
    routers: tuple[RouterSpec, ...]
    interrupts: tuple[str, ...]
    recursion_limit: int
    given: dict[str, Any] = field(default_factory=dict)
    after: tuple[str, ...] = ()  # interrupt_after


@dataclass
class Outcome:
    state: dict[str, Any] | None
    supersteps: list[list[str]]
    error: str | None
    pauses: list[list[str]]
    pause_states: list[tuple[bool, dict[str, Any]]]  # (one task paused, the state there)
    waiting: list[str] = field(default_factory=list)  # the last pause's next tasks (LangGraph)

    def compared(self) -> tuple[Any, ...]:
        """What must agree: the state, the supersteps, the error, the pauses and the state
        at each pause of a single task."""
        singles = [s for one, s in self.pause_states if one]
        return (self.state, self.supersteps, self.error, self.pauses, singles)


def _value(state: dict[str, Any]) -> int:
    return len(state.get("log", ())) + 3 * int(state.get("total", 0) or 0)


def node_fn(spec: NodeSpec) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def fn(state: dict[str, Any]) -> dict[str, Any]:
        total = state["total"] if spec.strict else state.get("total", "-")
        seen = state.get("seen", "-")
        summary = f"{len(state.get('log', ()))}/{total}/{state.get('item', '-')}/{seen}"
        out: dict[str, Any] = {"log": [f"{spec.name}:{summary}"]}
        if spec.adds:
            out["total"] = spec.adds
        if spec.writes_x:
            out["x"] = _value(state)
        if spec.writes_seen:
            out["seen"] = [spec.name]
        return out

    fn.__name__ = spec.name
    return fn


def router_fn(spec: RouterSpec, send: Callable[[str, dict[str, Any]], Any]) -> Callable[..., Any]:
    options = spec.options

    def route(state: dict[str, Any]) -> Any:
        v = _value(state)
        if spec.kind == "one":
            return options[v % len(options)]
        if spec.kind == "list":
            return [o for i, o in enumerate(options) if (v >> i) & 1]
        count = v % 3 + 1
        return [send(options[j % len(options)], {"item": j}) for j in range(count)]

    return route


def _error_kind(exc: BaseException) -> str:
    from agentnb.errors import ConflictingUpdate, NodeFailed, StepBudgetExhausted

    name = type(exc).__name__
    if name == "GraphRecursionError" or isinstance(exc, StepBudgetExhausted):
        return "budget"
    if name == "InvalidUpdateError" or isinstance(exc, ConflictingUpdate):
        return "conflict"
    if isinstance(exc, NodeFailed):
        return type(exc.error).__name__
    return name


def run_langgraph(spec: Spec) -> Outcome:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    g: Any = StateGraph(State)
    for node in spec.nodes:
        g.add_node(node.name, node_fn(node))
    g.add_edge(START, spec.entry)
    for source, target in spec.edges:
        g.add_edge(source, END if target == END_NAME else target)
    for sources, target in spec.joins:
        g.add_edge(list(sources), target)
    for router in spec.routers:
        targets = [END if o == END_NAME else o for o in router.options]
        g.add_conditional_edges(router.source, router_fn(router, Send), targets)
    app = g.compile(
        checkpointer=InMemorySaver(),
        interrupt_before=list(spec.interrupts),
        interrupt_after=list(spec.after),
    )
    config: Any = {"recursion_limit": spec.recursion_limit, "configurable": {"thread_id": "t"}}
    steps: dict[int, list[str]] = defaultdict(list)
    outcome = Outcome(None, [], None, [], [])
    given: Any = dict(spec.given)
    try:
        for _ in range(DRIVES):
            for mode, chunk in app.stream(given, config, stream_mode=["debug", "values"]):
                if mode == "debug" and chunk["type"] == "task":
                    steps[chunk["step"]].append(chunk["payload"]["name"])
            snapshot = app.get_state(config)
            if not snapshot.next:
                break
            last = steps[max(steps)] if steps else []
            if any(n in spec.after for n in last):  # after the superstep: its next tasks
                held = ["after", *sorted(snapshot.next)]
            else:
                held = sorted(n for n in snapshot.next if n in spec.interrupts)
            outcome.pauses.append(held)
            outcome.pause_states.append((len(snapshot.next) == 1, dict(snapshot.values)))
            outcome.waiting = sorted(snapshot.next)
            given = None
        outcome.state = dict(app.get_state(config).values)
    except Exception as exc:
        outcome.error = _error_kind(exc)
    outcome.supersteps = [sorted(steps[s]) for s in sorted(steps)]
    return outcome


def build_agentnb(spec: Spec, *, native: bool) -> Any:
    from agentnb import END, START, MemoryCheckpointer, Send, StateGraph

    g = StateGraph(State)
    for node in spec.nodes:
        g.add_node(node.name, node_fn(node))
    if native:
        g.set_entry_point(spec.entry)
    else:
        g.add_edge(START, spec.entry)
    for source, target in spec.edges:
        g.add_edge(source, END if target == END_NAME and native else target)
    for sources, target in spec.joins:
        g.add_edge(list(sources), target)
    for router in spec.routers:
        if native:
            targets = [END if o == END_NAME else o for o in router.options]
            route = router_fn(router, Send)
            if END_NAME in router.options:  # the router's answers are its outcomes
                g.add_conditional_edge(
                    router.source, route, dict(zip(router.options, targets, strict=True))
                )
            else:
                g.add_conditional_edge(router.source, route, targets)
        else:
            g.add_conditional_edges(router.source, router_fn(router, Send), list(router.options))
    store = MemoryCheckpointer()
    if native:
        if spec.interrupts:
            g.add_interrupt_before(*spec.interrupts)
        if spec.after:
            g.add_interrupt_after(*spec.after)
        return g.compile(store, recursion_limit=spec.recursion_limit, max_steps=100_000)
    return g.compile(
        checkpointer=store,
        interrupt_before=list(spec.interrupts),
        interrupt_after=list(spec.after),
        recursion_limit=spec.recursion_limit,
        max_steps=100_000,
    )


def run_agentnb(spec: Spec, *, native: bool = False) -> Outcome:
    from agentnb import Status

    outcome = Outcome(None, [], None, [], [])
    run = None
    try:
        wf = build_agentnb(spec, native=native)
        run = wf.start(dict(spec.given))
        held: list[Any] = []
        for attempt in range(DRIVES):  # as many drives as run_langgraph's streams
            if attempt:  # approve the pause the last drive ended at
                for task in held:
                    run.approve(by="tester", task=task.task_id)
                if not held:
                    run.approve(by="tester")
            run.run()
            if run.status != Status.PENDING:
                break
            held = run.pending()
            if held:
                outcome.pauses.append(sorted(t.node for t in held))
                outcome.pause_states.append((False, dict(run.state)))
            elif run.events[-1].payload.get("when") == "after":
                outcome.pauses.append(["after", *sorted(_next_nodes(run))])
                outcome.pause_states.append((_one_task(run), dict(run.state)))
            else:
                outcome.pauses.append([run.node])
                outcome.pause_states.append((_one_task(run), dict(run.state)))
        outcome.state = dict(run.state)
    except Exception as exc:
        outcome.error = _error_kind(exc)
    if run is not None:
        steps: dict[int, list[str]] = defaultdict(list)
        for event in run.events:
            if event.type == "node_start":
                steps[event.step].append(event.node)
        outcome.supersteps = [sorted(steps[s]) for s in sorted(steps)]
    return outcome


def _next_nodes(run: Any) -> list[str]:
    """The nodes of the superstep a run paused before (LangGraph's ``next``)."""
    from agentnb.graph.superstep import plan

    return [t.node for t in plan(run.workflow, run._frontier) if t.node != "__end__"]


def _one_task(run: Any) -> bool:
    """Whether the superstep a run paused before is one task (LangGraph's ``next``)."""
    from agentnb.graph.superstep import plan

    return len(plan(run.workflow, run._frontier)) == 1


def explained(lg: Outcome, ours: Outcome) -> str | None:
    """The deliberate difference that accounts for a disagreement, if one does.

    "held alone": LangGraph paused a whole superstep for an interrupt, agentnb ran its
    other tasks first (holding the interrupted one). Either one of them failed the run, so
    the same error ends both, agentnb without that pause, and the superstep lacks the held
    tasks, which never ran; or the harness's drives ran out at that pause, so both runs are
    unfinished there with the same state and pauses, and agentnb's runs show one more,
    partial superstep: some of LangGraph's next tasks, none that was held.
    """
    if lg.compared() == ours.compared():
        return None
    multi = [i for i, (one, _) in enumerate(lg.pause_states) if not one]
    if (
        multi
        and ours.error is not None
        and ours.error == lg.error
        and ours.pauses == lg.pauses[: len(ours.pauses)]
        and len(ours.pauses) in multi
        and ours.supersteps[:-1] == lg.supersteps[: len(ours.supersteps) - 1]
        and not Counter(ours.supersteps[-1]) - Counter(lg.supersteps[len(ours.supersteps) - 1])
    ):
        return "held alone"
    ran_beside_the_held = Counter(lg.waiting) - Counter(lg.pauses[-1] if lg.pauses else ())
    if (
        multi
        and multi[-1] == DRIVES - 1
        and lg.error is None
        and ours.error is None
        and lg.state == ours.state
        and lg.pauses == ours.pauses
        and lg.compared()[-1] == ours.compared()[-1]  # the state at each single pause
        and ours.supersteps[:-1] == lg.supersteps
        and not Counter(ours.supersteps[-1]) - ran_beside_the_held
    ):
        return "held alone"
    return "unexplained"


def summary(tally: Counter[str]) -> str:
    """The agreement figure, as the test session prints it."""
    graphs, agreed, native = tally["graphs"], tally["agreed"], tally["native"]
    kept = ", ".join(f"{tally[k]} {k!r}" for k in DELIBERATE)
    same = "each the same" if not tally["native differs"] else f"{tally['native differs']} not"
    return (
        f"LangGraph parity: {agreed} of {graphs} generated graphs give LangGraph's answer "
        f"(final state, supersteps, errors, pauses), the others differ only as listed; "
        f"{native} also built with agentnb's own spellings, {same}; "
        f"deliberate differences met: {kept}; unexplained: {tally['unexplained']}"
    )
