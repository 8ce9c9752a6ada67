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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentnb.errors import DefinitionError
from agentnb.fsm import session_state
from agentnb.fsm.chart import Statechart
from agentnb.fsm.content import SCXML_PROCESSOR, Content, DoneData
from agentnb.fsm.entry_exit import (
    compute_entry_set,
    compute_exit_set,
    document_order,
    is_in_final_state,
)
from agentnb.fsm.expressions import Expression, ExpressionError, Location
from agentnb.fsm.invocations import cancel_invokes, child_done, start_invokes
from agentnb.fsm.nodes import ChartTransition, Node
from agentnb.fsm.selection import select_eventless_transitions, select_transitions
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
        self.written: set[str] = set()
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
        self.preempted: list[str] = []
        self._sendids = 0
        # Invoked child sessions (``<invoke>``): the tree below this session.
        self.parent: Session | None = None
        self.invokeid: str | None = None
        self.route: tuple[str, ...] = ()
        self.children: dict[str, Session] = {}
        self.invoked: dict[str, tuple[Node, int]] = {}
        self.to_invoke: list[Node] = []
        self.final_data: Any = None
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

    def dump(self) -> dict[str, Any]:
        """The algorithm's state besides the datamodel, as JSON data (see session_state)."""
        return session_state.dump(self)

    @classmethod
    def restore(cls, chart: Statechart, state: Mapping[str, Any], data: dict[str, Any]) -> Session:
        """A session that continues from :meth:`dump` and ``data``."""
        return session_state.restore(chart, state, data)

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
        self.written.add(location.root)

    def raise_event(self, name: str, data: Any = None) -> None:
        self._queue_internal(new_event(name, data, type="internal"))

    def send(
        self, name: str, data: Any, *, target: str | None, delay: float, sendid: str | None
    ) -> None:
        if target == "#_internal":
            self._queue_internal(new_event(name, data, type="internal", sendid=sendid))
            return
        session = self._target(target)
        if session is None:
            self._queue_internal(
                new_event("error.communication", {"target": target}, type="platform", sendid=sendid)
            )
            return
        event = new_event(
            name,
            data,
            sendid=sendid,
            origin=f"#_scxml_{self.sessionid}",
            origintype=SCXML_PROCESSOR,
            invokeid=self.invokeid if session is self.parent else None,
        )
        if self._step is not None:
            self._step.queued.append(f"{name} (after {delay:g}s)" if delay > 0 else name)
        if delay > 0:
            request = TimerRequest(self.scoped(sendid), event, delay, session.route, self.route)
            self.top.timers.append(request)
        else:
            session.external.append(event)

    def _target(self, target: str | None) -> Session | None:
        """The session a ``<send>`` target names (``None``: unreachable, error.communication)."""
        if target in (None, "", f"#_scxml_{self.sessionid}"):
            return self
        assert target is not None
        if target == "#_parent":
            return self.parent
        if target.startswith("#_scxml_"):
            wanted = target.removeprefix("#_scxml_")
            return next((s for s in self.top.walk() if s.sessionid == wanted), None)
        if target.startswith("#_"):
            return self.children.get(target[2:])
        raise ExpressionError(f"send target {target!r} is not supported (only SCXML sessions)")

    def cancel(self, sendid: str) -> None:
        scoped = self.scoped(sendid) or sendid
        root = self.top
        root.timers = [t for t in root.timers if t.sendid != scoped]
        root.cancelled.append(scoped)

    def scoped(self, sendid: str | None) -> str | None:
        """A send id as the store keeps it: prefixed by the invoke route in a child session."""
        if sendid is None or not self.route:
            return sendid
        return "/".join((*self.route, sendid))

    @property
    def top(self) -> Session:
        """The outermost session (the instance's own)."""
        session = self
        while session.parent is not None:
            session = session.parent
        return session

    def walk(self) -> list[Session]:
        """This session and every session invoked below it, parents first."""
        found = [self]
        for child in list(self.children.values()):
            found += child.walk()
        return found

    def find(self, route: Sequence[str]) -> Session | None:
        """The session at ``route`` below this one (``None`` if it has ended)."""
        session: Session | None = self
        for invokeid in route:
            session = session.children.get(invokeid) if session is not None else None
        return session

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

    def error(self, message: str, sendid: str | None = None) -> None:
        """Queue ``error.execution`` (an expression or element failed)."""
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
                self.error(f"{describe(item)}: {exc}", exc.sendid)
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
        invokeid = event.get("invokeid")
        if invokeid in self.invoked:  # an event from a child: its <finalize> runs first
            node, index = self.invoked[invokeid]
            self.execute(node.invokes[index].finalize)
        for iid, (node, index) in list(self.invoked.items()):
            if node.invokes[index].autoforward and iid in self.children:
                self.children[iid].external.append(copy.deepcopy(event))
        enabled = select_transitions(self, event)
        if enabled:
            self.microstep(enabled, event["name"])
        self.macrostep()
        return bool(enabled)

    def drain(self) -> None:
        """Process queued external events — sent without delay, here or between the sessions
        of the invoke tree — until every session is idle."""
        for _ in range(MAX_MICROSTEPS):
            busy = False
            for session in self.walk():
                while session.external and session.running:
                    busy = True
                    trace = self.trace
                    session.process(session.external.popleft())
                    if session is self:
                        self.trace = trace + self.trace
                    else:
                        self.trace = trace
            if not busy:
                return
        raise DefinitionError(
            f"chart {self.chart.name!r} keeps sending itself events without end",
            culprit=self.chart.name,
            fix="Make the sessions' event exchange stop",
        )

    def macrostep(self) -> None:
        steps = 0
        while True:
            steps = self._macrostep(steps)
            if not self.running or not self.to_invoke:
                return
            start_invokes(self)
            if not self.internal:
                return

    def _macrostep(self, steps: int) -> int:
        while self.running:
            enabled = select_eventless_transitions(self)
            name: str | None = None
            if not enabled:
                if not self.internal:
                    break
                event = self.internal.popleft()
                self._set_event(event)
                name = event["name"]
                enabled = select_transitions(self, event)
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
        return steps

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
                self.error(f"data {key!r}: {exc}")

    # -- one microstep -----------------------------------------------------------------

    def microstep(self, enabled: list[ChartTransition], event: str | None = None) -> None:
        step = Microstep(event, taken=[repr(t) for t in enabled], preempted=self.preempted)
        step.transitions = [t.order for t in enabled]
        self.preempted = []
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
            if state in self.to_invoke:
                self.to_invoke.remove(state)
            for block in state.onexit:
                self.execute(block)
            cancel_invokes(self, state)
            self.configuration.discard(state)

    def enter_states(self, enabled: list[ChartTransition]) -> None:
        entry = compute_entry_set(enabled, self.history)
        default_entry, history_content = entry.default_entry, entry.history_content
        for state in sorted(entry.entering, key=document_order):
            self.configuration.add(state)
            if self._step is not None:
                self._step.entered.append(state.id)
            if state.invokes:
                self.to_invoke.append(state)
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
                    self.final_data = self._donedata(state)
                    self.running = False
                    self._halt()
                    if self.parent is not None:
                        child_done(self.parent, self)
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
                self.error(f"donedata of {state.id!r}: {exc}")
                return None
        return done

    def _halt(self) -> None:
        # The standard exits every state when the session ends; the configuration is kept
        # as it was at the end, so a finished instance still shows where it stopped.
        for state in sorted(self.configuration, key=document_order, reverse=True):
            for block in state.onexit:
                self.execute(block)
            cancel_invokes(self, state)
