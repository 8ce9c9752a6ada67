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
from typing import Any

from agentnb.errors import DefinitionError
from agentnb.fsm.chart import Statechart
from agentnb.fsm.content import SCXML_PROCESSOR, Content, DoneData
from agentnb.fsm.entry_exit import (
    compute_entry_set,
    compute_exit_set,
    document_order,
    is_in_final_state,
)
from agentnb.fsm.expressions import Expression, ExpressionError, Location
from agentnb.fsm.nodes import ChartTransition, Node
from agentnb.fsm.trace import Microstep, TimerRequest, describe, new_event

__all__ = ["Microstep", "Session", "TimerRequest", "new_event"]

SYSTEM = frozenset({"_event", "_sessionid", "_name", "_ioprocessors", "_x"})
MAX_MICROSTEPS = 10_000


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
            "configuration": [n.id for n in sorted(self.configuration, key=document_order)],
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
                self._step.actions.append(describe(item))
            try:
                item.run(self)
            except ExpressionError as exc:
                self._error(f"{describe(item)}: {exc}", exc.sendid)
                return

    # -- the main loop, split into calls -----------------------------------------------

    def start(self) -> None:
        """Initialise the datamodel and enter the initial configuration (then a macrostep)."""
        self.trace = []
        self._init_data(self.chart.root)
        if self.chart.binding == "early":
            for node in self.chart.nodes.values():
                self._init_data(node)
        assert self.chart.root.initial is not None
        first = self._step = Microstep(None)
        self.enter_states([self.chart.root.initial])
        first.configuration = [n.id for n in sorted(self.configuration, key=document_order)]
        self.trace.append(first)
        self._step = None
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
        atomic = sorted((n for n in self.configuration if n.is_atomic), key=document_order)
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
            exit1 = compute_exit_set(self.configuration, [t1], self.history)
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
        step.transitions = [t.order for t in enabled]
        self._preempted = []
        self._step = step
        self.trace.append(step)
        self.exit_states(enabled)
        for t in enabled:
            self.execute(t.content)
        self.enter_states(enabled)
        step.configuration = [n.id for n in sorted(self.configuration, key=document_order)]
        self._step = None

    def exit_states(self, enabled: list[ChartTransition]) -> None:
        leaving = compute_exit_set(self.configuration, enabled, self.history)
        leaving_order = sorted(leaving, key=document_order, reverse=True)
        for state in leaving_order:
            for h in state.history_children:
                if h.deep:
                    value = [
                        s for s in self.configuration if s.is_atomic and s.is_descendant_of(state)
                    ]
                else:
                    value = [s for s in self.configuration if s.parent is state]
                self.history[h.id] = sorted(value, key=document_order)
        for state in leaving_order:
            if self._step is not None:
                self._step.exited.append(state.id)
            for block in state.onexit:
                self.execute(block)
            self.configuration.discard(state)

    def enter_states(self, enabled: list[ChartTransition]) -> None:
        entry = compute_entry_set(enabled, self.history)
        default_entry, history_content = entry.default_entry, entry.history_content
        for state in sorted(entry.entering, key=document_order):
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
                    and all(
                        is_in_final_state(c, self.configuration) for c in grandparent.child_states
                    )
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
        for state in sorted(self.configuration, key=document_order, reverse=True):
            for block in state.onexit:
                self.execute(block)
