"""The W3C "Algorithm for SCXML Interpretation", over a :class:`~agentnb.fsm.chart.Statechart`.

A :class:`Session` holds what the algorithm keeps between events — the configuration, the
history values, the datamodel, the internal and external queues — and runs it: ``start``
enters the initial configuration, ``process`` handles one external event, and both run
*macrosteps* to completion (eventless transitions, then internal events, until stable).
The procedures keep the standard's names (``select_transitions``,
``remove_conflicting_transitions``, ``compute_exit_set``, ``get_transition_domain``,
``find_lcca``, ``add_descendant_states_to_enter`` ...), so the code reads beside the spec.

A session does no I/O. Delayed sends become :class:`TimerRequest` items and cancellations a
list of send ids; the instance turns them into durable timers in its store. Each microstep
is written to ``trace`` (transitions taken and preempted, states exited and entered,
actions, events queued), which is what the microstep view shows.
"""

from __future__ import annotations

import copy
import uuid
from collections import ChainMap, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentnb.errors import DefinitionError
from agentnb.fsm.chart import ROOT, ChartTransition, Node, Statechart
from agentnb.fsm.content import SCXML_PROCESSOR, Content, DoneData
from agentnb.fsm.expressions import Expression, ExpressionError, Location

__all__ = ["Microstep", "Session", "TimerRequest", "new_event"]

SYSTEM = frozenset({"_event", "_sessionid", "_name", "_ioprocessors", "_x"})
MAX_MICROSTEPS = 10_000


def new_event(
    name: str, data: Any = None, *, type: str = "external", **fields: Any
) -> dict[str, Any]:
    """An event as the datamodel sees ``_event``: a dict read with attribute syntax."""
    event = {
        "name": name,
        "type": type,
        "sendid": None,
        "origin": None,
        "origintype": None,
        "invokeid": None,
        "data": data,
    }
    event.update(fields)
    return event


@dataclass(frozen=True, slots=True)
class TimerRequest:
    """A delayed send the session asked for: the instance stores it as a timer."""

    sendid: str | None
    event: dict[str, Any]
    delay: float


@dataclass(slots=True)
class Microstep:
    """What one microstep did, in order (for the microstep view and for teaching)."""

    event: str | None
    taken: list[str] = field(default_factory=list)
    preempted: list[str] = field(default_factory=list)
    exited: list[str] = field(default_factory=list)
    entered: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    queued: list[str] = field(default_factory=list)


class Session:
    """One statechart session: the algorithm's state and procedures (no I/O)."""

    def __init__(self, chart: Statechart, sessionid: str | None = None) -> None:
        self.chart = chart
        self.sessionid = sessionid or uuid.uuid4().hex
        self.configuration: set[Node] = set()
        self.history: dict[str, list[Node]] = {}
        self.data: dict[str, Any] = {}
        self.entered_once: set[str] = set()
        self.internal: deque[dict[str, Any]] = deque()
        self.external: deque[dict[str, Any]] = deque()
        self.timers: list[TimerRequest] = []
        self.cancelled: list[str] = []
        self.logs: list[tuple[str, Any]] = []
        self.trace: list[Microstep] = []
        self.running = True
        self.event: dict[str, Any] | None = None
        self._step: Microstep | None = None
        self._preempted: list[str] = []
        self._sendids = 0
        location = f"#_scxml_{self.sessionid}"
        self.system: dict[str, Any] = {
            "_event": None,
            "_sessionid": self.sessionid,
            "_name": chart.name,
            "_ioprocessors": {
                SCXML_PROCESSOR: {"location": location},
                "scxml": {"location": location},
            },
        }
        self.names: ChainMap[str, Any] = ChainMap(self.system, self.data)

    # -- the state a store keeps ---------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        """The algorithm's state besides the datamodel, as JSON data."""
        return {
            "configuration": [n.id for n in sorted(self.configuration, key=_doc)],
            "history": {k: [n.id for n in v] for k, v in self.history.items()},
            "entered": sorted(self.entered_once),
            "running": self.running,
            "sessionid": self.sessionid,
        }

    @classmethod
    def restore(cls, chart: Statechart, state: Mapping[str, Any], data: dict[str, Any]) -> Session:
        """A session that continues from :meth:`dump` and ``data`` (unknown ids raise KeyError)."""
        session = cls(chart, state.get("sessionid"))
        session.configuration = {chart.nodes[i] for i in state["configuration"]}
        session.history = {k: [chart.nodes[i] for i in v] for k, v in state["history"].items()}
        session.entered_once = set(state.get("entered", ()))
        session.running = bool(state.get("running", True))
        session.data.update(data)
        return session

    # -- Runtime (what executable content may do) -------------------------------------

    def in_state(self, state_id: str) -> bool:
        node = self.chart.nodes.get(state_id)
        return node is not None and node in self.configuration

    def evaluate(self, expr: Expression) -> Any:
        return expr.evaluate(self.names, self.in_state)

    def assign(self, location: Location, value: Any, *, declare: bool = False) -> None:
        if location.root in SYSTEM:
            raise ExpressionError(f"{location.root} is a system variable and cannot be assigned")
        if location.root not in self.data and not (
            declare and location.text.strip() == location.root
        ):
            raise ExpressionError(f"{location.root!r} is not declared in the datamodel")
        location.assign(self.data, value, self.in_state)

    def raise_event(self, name: str, data: Any = None) -> None:
        self._queue_internal(new_event(name, data, type="internal"))

    def send(
        self, name: str, data: Any, *, target: str | None, delay: float, sendid: str | None
    ) -> None:
        own = f"#_scxml_{self.sessionid}"
        if target == "#_internal":
            self._queue_internal(new_event(name, data, type="internal", sendid=sendid))
            return
        if target not in (None, "", own):
            if isinstance(target, str) and target.startswith("#_scxml_"):
                self._queue_internal(
                    new_event(
                        "error.communication", {"target": target}, type="platform", sendid=sendid
                    )
                )
                return
            raise ExpressionError(f"send target {target!r} is not supported (only this session)")
        event = new_event(name, data, sendid=sendid, origin=own, origintype=SCXML_PROCESSOR)
        if self._step is not None:
            self._step.queued.append(f"{name} (after {delay:g}s)" if delay > 0 else name)
        if delay > 0:
            self.timers.append(TimerRequest(sendid, event, delay))
        else:
            self.external.append(event)

    def cancel(self, sendid: str) -> None:
        self.timers = [t for t in self.timers if t.sendid != sendid]
        self.cancelled.append(sendid)

    def log(self, label: str, value: Any) -> None:
        self.logs.append((label, value))

    def new_sendid(self) -> str:
        self._sendids += 1
        return f"{self.sessionid}.send.{self._sendids}.{uuid.uuid4().hex[:8]}"

    def payload(self) -> Any:
        return None if self.event is None else self.event.get("data")

    def _queue_internal(self, event: dict[str, Any]) -> None:
        self.internal.append(event)
        if self._step is not None:
            self._step.queued.append(event["name"])

    def _error(self, message: str, sendid: str | None = None) -> None:
        self._queue_internal(
            new_event("error.execution", {"message": message}, type="platform", sendid=sendid)
        )

    def execute(self, block: Iterable[Content]) -> None:
        """Run one block of executable content; an error ends the block (error.execution)."""
        for item in block:
            if self._step is not None:
                self._step.actions.append(_describe(item))
            try:
                item.run(self)
            except ExpressionError as exc:
                self._error(f"{_describe(item)}: {exc}", exc.sendid)
                return

    # -- the main loop, split into calls -----------------------------------------------

    def start(self) -> None:
        """Initialise the datamodel and enter the initial configuration (then a macrostep)."""
        self.trace = []
        self._init_data(self.chart.root)
        if self.chart.binding == "early":
            for node in self.chart.nodes.values():
                self._init_data(node)
        self.execute(self.chart.scripts)
        assert self.chart.root.initial is not None
        self._step = Microstep(None)
        self.enter_states([self.chart.root.initial])
        self.trace.append(self._step)
        self.macrostep()

    def process(self, event: dict[str, Any]) -> bool:
        """Handle one external event and run to a stable configuration.

        Returns whether the event enabled a transition.
        """
        if not self.running:
            return False
        self.trace = []
        self._set_event(event)
        enabled = self.select_transitions(event)
        if enabled:
            self.microstep(enabled, event["name"])
        self.macrostep()
        return bool(enabled)

    def drain(self) -> None:
        """Process the external events the session sent itself (``<send>`` without delay)."""
        while self.external and self.running:
            trace = self.trace
            self.process(self.external.popleft())
            self.trace = trace + self.trace

    def macrostep(self) -> None:
        steps = 0
        while self.running:
            enabled = self.select_eventless_transitions()
            name: str | None = None
            if not enabled:
                if not self.internal:
                    break
                event = self.internal.popleft()
                self._set_event(event)
                name = event["name"]
                enabled = self.select_transitions(event)
            if enabled:
                steps += 1
                if steps > MAX_MICROSTEPS:
                    raise DefinitionError(
                        f"chart {self.chart.name!r} ran {MAX_MICROSTEPS} microsteps without "
                        "reaching a stable configuration (an eventless or raised-event loop); "
                        "nothing was saved",
                        culprit=self.chart.name,
                        fix="Guard the eventless transitions or raised events so the loop ends",
                    )
                self.microstep(enabled, name)

    def _set_event(self, event: dict[str, Any]) -> None:
        self.event = event
        self.system["_event"] = event

    def _init_data(self, node: Node) -> None:
        if node.id in self.entered_once:
            return
        self.entered_once.add(node.id)
        for key, expr, literal in node.data:
            if key in self.data and node is self.chart.root:
                continue  # a value given at start replaces the declared one
            try:
                self.data[key] = self.evaluate(expr) if expr is not None else literal
            except ExpressionError as exc:
                self.data[key] = None
                self._error(f"data {key!r}: {exc}")

    # -- selecting transitions ---------------------------------------------------------

    def _select(self, event: dict[str, Any] | None) -> list[ChartTransition]:
        enabled: list[ChartTransition] = []
        atomic = sorted((n for n in self.configuration if n.is_atomic), key=_doc)
        for state in atomic:
            node: Node | None = state
            while node is not None and node.kind != "scxml":
                chosen = next((t for t in node.transitions if self._enabled(t, event)), None)
                if chosen is not None:
                    if chosen not in enabled:
                        enabled.append(chosen)
                    break
                node = node.parent
        return self.remove_conflicting_transitions(enabled)

    def select_eventless_transitions(self) -> list[ChartTransition]:
        return self._select(None)

    def select_transitions(self, event: dict[str, Any]) -> list[ChartTransition]:
        return self._select(event)

    def _enabled(self, t: ChartTransition, event: dict[str, Any] | None) -> bool:
        if event is None:
            if t.events:
                return False
        elif not t.events or not t.matches(event["name"]):
            return False
        return self._condition(t)

    def _condition(self, t: ChartTransition) -> bool:
        cond = t.cond
        if cond is None:
            return True
        if cond.fn is not None:
            result = cond.fn(copy.deepcopy(self.data), self.payload())
            if not isinstance(result, bool):
                raise ExpressionError(f"guard {cond.text!r} returned {result!r}, not a bool")
            return result
        try:
            return bool(self.evaluate(cond.expr))  # type: ignore[arg-type]
        except ExpressionError as exc:
            self._error(f"cond {cond.text!r}: {exc}")
            return False

    def remove_conflicting_transitions(
        self, enabled: list[ChartTransition]
    ) -> list[ChartTransition]:
        filtered: list[ChartTransition] = []
        exits: dict[int, set[Node]] = {}
        for t1 in enabled:
            exit1 = self.compute_exit_set([t1])
            preempted = False
            remove: list[ChartTransition] = []
            for t2 in filtered:
                if exit1 & exits[id(t2)]:
                    if t1.source.is_descendant_of(t2.source):
                        remove.append(t2)
                    else:
                        preempted = True
                        break
            if preempted:
                self._preempted.append(repr(t1))
                continue
            for t2 in remove:
                filtered.remove(t2)
                self._preempted.append(repr(t2))
            filtered.append(t1)
            exits[id(t1)] = exit1
        return filtered

    # -- one microstep -----------------------------------------------------------------

    def microstep(self, enabled: list[ChartTransition], event: str | None = None) -> None:
        step = Microstep(event, taken=[repr(t) for t in enabled], preempted=self._preempted)
        self._preempted = []
        self._step = step
        self.trace.append(step)
        self.exit_states(enabled)
        for t in enabled:
            self.execute(t.content)
        self.enter_states(enabled)
        self._step = None

    def exit_states(self, enabled: list[ChartTransition]) -> None:
        leaving = sorted(self.compute_exit_set(enabled), key=_doc, reverse=True)
        for state in leaving:
            for h in state.history_children:
                if h.deep:
                    value = [
                        s for s in self.configuration if s.is_atomic and s.is_descendant_of(state)
                    ]
                else:
                    value = [s for s in self.configuration if s.parent is state]
                self.history[h.id] = sorted(value, key=_doc)
        for state in leaving:
            if self._step is not None:
                self._step.exited.append(state.id)
            for block in state.onexit:
                self.execute(block)
            self.configuration.discard(state)

    def compute_exit_set(self, transitions: list[ChartTransition]) -> set[Node]:
        leaving: set[Node] = set()
        for t in transitions:
            if t.target_nodes:
                domain = self.get_transition_domain(t)
                leaving.update(
                    s
                    for s in self.configuration
                    if domain is not None and s.is_descendant_of(domain)
                )
        return leaving

    def enter_states(self, enabled: list[ChartTransition]) -> None:
        entering: set[Node] = set()
        default_entry: set[Node] = set()
        history_content: dict[str, tuple[Content, ...]] = {}
        self.compute_entry_set(enabled, entering, default_entry, history_content)
        for state in sorted(entering, key=_doc):
            self.configuration.add(state)
            if self._step is not None:
                self._step.entered.append(state.id)
            if self.chart.binding == "late":
                self._init_data(state)
            for block in state.onentry:
                self.execute(block)
            if state in default_entry and state.initial is not None:
                self.execute(state.initial.content)
            if state.id in history_content:
                self.execute(history_content[state.id])
            if state.kind == "final":
                parent = state.parent
                assert parent is not None
                if parent.kind == "scxml":
                    self.running = False
                    self._halt()
                    return
                data = self._donedata(state)
                self._queue_internal(new_event(f"done.state.{parent.id}", data, type="internal"))
                grandparent = parent.parent
                if (
                    grandparent is not None
                    and grandparent.kind == "parallel"
                    and all(self.is_in_final_state(c) for c in grandparent.child_states)
                ):
                    self._queue_internal(new_event(f"done.state.{grandparent.id}", type="internal"))

    def _donedata(self, state: Node) -> Any:
        done = state.donedata
        if isinstance(done, DoneData):
            try:
                return done.value(self)
            except ExpressionError as exc:
                self._error(f"donedata of {state.id!r}: {exc}")
                return None
        return done

    def _halt(self) -> None:
        # The standard exits every state when the session ends; the configuration is kept
        # as it was at the end, so a finished instance still shows where it stopped.
        for state in sorted(self.configuration, key=_doc, reverse=True):
            for block in state.onexit:
                self.execute(block)

    def compute_entry_set(
        self,
        transitions: list[ChartTransition],
        entering: set[Node],
        default_entry: set[Node],
        history_content: dict[str, tuple[Content, ...]],
    ) -> None:
        for t in transitions:
            for s in t.target_nodes:
                self.add_descendant_states_to_enter(s, entering, default_entry, history_content)
            ancestor = self.get_transition_domain(t)
            for s in self.get_effective_target_states(t):
                self.add_ancestor_states_to_enter(
                    s, ancestor, entering, default_entry, history_content
                )

    def add_descendant_states_to_enter(
        self,
        state: Node,
        entering: set[Node],
        default_entry: set[Node],
        history_content: dict[str, tuple[Content, ...]],
    ) -> None:
        if state.kind == "history":
            parent = state.parent
            assert parent is not None
            remembered = self.history.get(state.id)
            if remembered:
                targets: Iterable[Node] = remembered
            else:
                assert state.initial is not None
                history_content[parent.id] = state.initial.content
                targets = state.initial.target_nodes
            for s in targets:
                self.add_descendant_states_to_enter(s, entering, default_entry, history_content)
            for s in targets:
                self.add_ancestor_states_to_enter(
                    s, parent, entering, default_entry, history_content
                )
            return
        entering.add(state)
        if state.is_compound:
            default_entry.add(state)
            assert state.initial is not None
            for s in state.initial.target_nodes:
                self.add_descendant_states_to_enter(s, entering, default_entry, history_content)
            for s in state.initial.target_nodes:
                self.add_ancestor_states_to_enter(
                    s, state, entering, default_entry, history_content
                )
        elif state.kind == "parallel":
            for child in state.child_states:
                if not any(s.is_descendant_of(child) or s is child for s in entering):
                    self.add_descendant_states_to_enter(
                        child, entering, default_entry, history_content
                    )

    def add_ancestor_states_to_enter(
        self,
        state: Node,
        ancestor: Node | None,
        entering: set[Node],
        default_entry: set[Node],
        history_content: dict[str, tuple[Content, ...]],
    ) -> None:
        for anc in _proper_ancestors(state, ancestor):
            if anc.kind == "scxml":
                continue
            entering.add(anc)
            if anc.kind == "parallel":
                for child in anc.child_states:
                    if not any(s.is_descendant_of(child) or s is child for s in entering):
                        self.add_descendant_states_to_enter(
                            child, entering, default_entry, history_content
                        )

    def is_in_final_state(self, state: Node) -> bool:
        if state.is_compound:
            return any(c.kind == "final" and c in self.configuration for c in state.child_states)
        if state.kind == "parallel":
            return all(self.is_in_final_state(c) for c in state.child_states)
        return False

    def get_transition_domain(self, t: ChartTransition) -> Node | None:
        targets = self.get_effective_target_states(t)
        if not targets:
            return None
        if t.source.kind == "scxml":
            return t.source
        if (
            t.internal
            and t.source.is_compound
            and all(s.is_descendant_of(t.source) for s in targets)
        ):
            return t.source
        return find_lcca([t.source, *targets])

    def get_effective_target_states(self, t: ChartTransition) -> list[Node]:
        targets: list[Node] = []
        for s in t.target_nodes:
            if s.kind == "history":
                remembered = self.history.get(s.id)
                if remembered:
                    found = remembered
                else:
                    assert s.initial is not None
                    found = self.get_effective_target_states(s.initial)
                targets.extend(x for x in found if x not in targets)
            elif s not in targets:
                targets.append(s)
        return targets


def _doc(node: Node) -> int:
    return node.order


def _proper_ancestors(state: Node, stop: Node | None) -> list[Node]:
    found: list[Node] = []
    node = state.parent
    while node is not None and node is not stop:
        found.append(node)
        node = node.parent
    return found


def find_lcca(states: list[Node]) -> Node:
    """The least common compound ancestor (the root when nothing smaller contains them all)."""
    head, tail = states[0], states[1:]
    for anc in _proper_ancestors(head, None):
        if (anc.is_compound or anc.kind == "scxml") and all(s.is_descendant_of(anc) for s in tail):
            return anc
    raise AssertionError(f"no common ancestor for {states} under {ROOT}")  # pragma: no cover


def _describe(item: Content) -> str:
    name = type(item).__name__.lower()
    if name == "call":
        return f"call {getattr(getattr(item, 'fn', None), '__name__', 'action')}"
    for attr in ("event", "location", "label", "sendid"):
        value = getattr(item, attr, None)
        if value is not None:
            text = getattr(value, "text", value)
            return f"{name} {text}"
    return name
