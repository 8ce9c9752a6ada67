"""Bring your LangGraph graph: draw, step and approve a LangGraph thread in agentnb's panels.

``pip install "agentnb[langgraph]"``. A compiled LangGraph graph and the config of one of
its threads (``thread_id``, and the graph's checkpointer) become a :class:`LangGraphRun`:
the same handle and the same panel (:class:`~agentnb.widgets.RunView`) as an agentnb run.

    >>> from agentnb.interop.langgraph import attach  # doctest: +SKIP
    >>> run = attach(app, {"configurable": {"thread_id": "t1"}}, input={"question": "hi"})
    >>> run.view()  # the diagram, the log, the state, Step/Run, Approve/Reject

**LangGraph stays the truth.** The thread's checkpoints are LangGraph's, in its
checkpointer; agentnb keeps a *mirror* of the thread beside it in an agentnb store
(``store=``, in memory by default): one agentnb step per LangGraph checkpoint of the
branch shown (agentnb step *k* is LangGraph's ``metadata["step"]`` *k*), its event log
(what ``stream(..., stream_mode=["updates", "debug"])`` reported, and what the history
says), and — what LangGraph's checkpointer has no table for — the audit of every decision
made through it, refused attempts included. The panel reads the mirror; its buttons drive
LangGraph:

* **Step** runs one superstep (``interrupt_after="*"`` for that call), **Run** runs to the
  next pause or the end, **Stop** asks LangGraph to drain (``RunControl.request_drain``):
  the superstep in flight finishes and is saved, the next does not start, and the run is
  recorded ``cancelled`` (:meth:`LangGraphRun.stop`);
* a subgraph's own steps, streamed under its ``checkpoint_ns``, are mirrored as a child
  run (``run.children()``), so the panel lights its inner nodes as they run and folds its
  box, as it does for agentnb's own subgraphs;
* a static ``interrupt_before`` / ``interrupt_after`` is shown pending with Approve/Reject;
  Approve resumes the thread (``stream(None, config)``), with edits applied first through
  ``update_state``;
* a dynamic ``interrupt(value)`` is a question; each pending interrupt is answered by its
  id, and once all are answered the thread resumes with ``Command(resume={id: value})``;
* **Reject** ends the thread: the decision is audited, then
  ``update_state(config, None, as_node=END)`` clears the tasks LangGraph would run next,
  so the thread's ``next`` is empty and continuing it does nothing. Nothing of the
  rejected node runs; the state is kept as it was shown (see the guide).

A decision is bound to the checkpoint id it was shown (the pause's digest is that id):
if the thread moved on since (another process continued it), it is refused with
:class:`~agentnb.errors.StaleApproval`; a second click on a decided pause is refused with
:class:`~agentnb.errors.ApprovalNotPending` — both audited by the agentnb store.

Time travel: :meth:`LangGraphRun.fork` continues from an older checkpoint (with an edit,
if given): LangGraph forks the thread there, and agentnb shows the branch as a run of its
own, forked from the step it left (``run.branches()`` lists the thread's tree).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from agentnb._json import dumps
from agentnb.errors import (
    AgentnbError,
    DefinitionError,
    MissingDependency,
    RunNotFound,
    StaleApproval,
)
from agentnb.graph.builder import END, StateGraph
from agentnb.graph.run import Run, StepResult
from agentnb.graph.workflow import Workflow
from agentnb.interop._langgraph_diagram import (
    LG_END,
    LG_START,
    diagram_of,
    interrupts_of,
    subgraphs_of,
)
from agentnb.interop._mirrored import mirrored_node, never_routed
from agentnb.interop._readable import readable
from agentnb.render.model import Diagram
from agentnb.store.base import Checkpointer, CheckpointWrite, DecisionEdit, StepCommit
from agentnb.store.records import Decision, Event, EventType, RunRecord, Status

try:
    import langgraph  # noqa: F401  # checked here so the error names the extra to install
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependency("langgraph", "langgraph", "showing LangGraph graphs") from exc

__all__ = ["LangGraphRun", "attach", "diagram", "readable"]

_MODES = ["updates", "debug"]
_LEASE = 300.0  # seconds: a drive holds the mirror while LangGraph runs a superstep


def diagram(graph: Any, *, title: str | None = None) -> Diagram:
    """The agentnb diagram of compiled LangGraph ``graph`` (draw it with ``render_svg``).

    Conditional edges carry their outcomes; a router without a path map leads to an
    *unknown targets* node; interrupts and subgraphs are drawn as agentnb draws its own.
    """
    return diagram_of(graph, title=title)


def _question(found: Any, at: str | None, values: dict[str, Any]) -> dict[str, Any]:
    """The ``interrupted`` event's payload for LangGraph's interrupt ``found``, asked at
    checkpoint ``at`` with the thread's state ``values``."""
    return {
        "when": "input",
        "question": _interrupt_text(found.value),
        "value": readable(found.value),
        "task": found.id,
        "digest": at,
        "state": values,
    }


def _interrupt_text(value: Any) -> dict[str, Any]:
    """An ``interrupt(value)`` as the panel's question: its text, and a schema if it has one."""
    if isinstance(value, str):
        return {"question": value}
    shown = readable(value)
    if isinstance(shown, dict):
        text = shown.get("question") or shown.get("prompt") or shown.get("message")
        question: dict[str, Any] = {
            "question": text if isinstance(text, str) else json.dumps(shown, ensure_ascii=False)
        }
        if isinstance(shown.get("schema"), dict):
            question["schema"] = shown["schema"]
        return question
    return {"question": json.dumps(shown, ensure_ascii=False)}


def _mirror_graph(graph: Any, name: str) -> StateGraph:
    """The nodes and entry of ``graph`` as an agentnb graph: what the panel's overlay folds
    the mirrored events against (the drawing is :func:`diagram`, not this)."""
    builder = graph.builder
    mirror = StateGraph(name, max_steps=10**6)
    inner = subgraphs_of(graph)
    for node in builder.nodes:
        sub = inner.get(node)
        if sub is not None and getattr(sub, "builder", None) is not None:
            # Declared a subgraph, as agentnb declares its own: the panel then lights the
            # child run each subgraph task is mirrored as (see _subgraph_event).
            # (add_node takes a graph as a subgraph; its annotation names functions only)
            box: Any = _mirror_graph(sub, getattr(sub, "name", None) or node)
            mirror.add_node(node, box)
        else:
            mirror.add_node(node, mirrored_node(node, "node", "a LangGraph graph", "LangGraphRun"))
    entry = sorted(t for s, t in builder.edges if s == LG_START)
    for _start, branch in builder.branches.get(LG_START, {}).items():
        entry += sorted(t for t in (branch.ends or {}).values() if t != LG_END)
    first = entry[0] if entry else next(iter(builder.nodes), None)
    if first is not None:
        mirror.set_entry_point(first)
    anywhere = [*builder.nodes, END]
    for node in builder.nodes:  # every node may lead anywhere: agentnb never routes it
        mirror.add_conditional_edges(
            node, never_routed("a LangGraph graph's routers run in LangGraph"), anywhere
        )
    for sources, target in getattr(builder, "waiting_edges", ()):
        with contextlib.suppress(DefinitionError):
            mirror.add_edge(list(sources), target if target != LG_END else END)
    return mirror


def attach(
    graph: Any,
    config: Mapping[str, Any],
    *,
    input: Any = None,
    store: Checkpointer | None = None,
    name: str | None = None,
) -> LangGraphRun:
    """A :class:`LangGraphRun` of the thread ``config`` names, on compiled ``graph``.

    Args:
        graph: a compiled LangGraph graph with a checkpointer (``compile(checkpointer=...)``).
        config: the thread's config: ``{"configurable": {"thread_id": ...}}``.
        input: what the first Step or Run sends when the thread has no checkpoint yet.
        store: the agentnb store that keeps the mirror and the decisions' audit (a
            ``MemoryCheckpointer`` by default; a ``SqliteCheckpointer`` keeps the audit).
        name: the title of the panel (the graph's name by default).

    Raises:
        DefinitionError: the graph has no checkpointer, or ``config`` no ``thread_id``.
    """
    configurable = dict(config.get("configurable") or {})
    thread = configurable.get("thread_id")
    if not isinstance(thread, str) or not thread:
        raise DefinitionError(
            "the config names no thread",
            culprit="config",
            fix='Give it one: {"configurable": {"thread_id": "t1"}}.',
        )
    if getattr(graph, "checkpointer", None) in (None, False, True):
        raise DefinitionError(
            "the LangGraph graph has no checkpointer of its own: its thread keeps no history",
            culprit="graph",
            fix="Compile it with one: graph.compile(checkpointer=InMemorySaver()) "
            "(or a SqliteSaver).",
        )
    if store is None:
        from agentnb.store.memory import MemoryCheckpointer

        store = MemoryCheckpointer()
    title = name or getattr(graph, "name", None) or "LangGraph"
    workflow = _mirror_graph(graph, title).compile(store, max_steps=10**6)
    head = configurable.get("checkpoint_id")
    run_id = thread if not head else f"{thread}@{head}"
    base = {"configurable": {k: v for k, v in configurable.items() if k != "checkpoint_id"}}
    try:
        record = store.get_run(run_id)
    except RunNotFound:
        record = _create(graph, workflow, base, run_id, head, input)
    run = LangGraphRun(workflow, record, graph=graph, config=base, input=input)
    if record.seq == 1:  # just made: a head waiting before an interrupt node is a pause
        run._hold_head()
    run.sync()
    return run


def _snapshot(graph: Any, config: Mapping[str, Any], checkpoint: str | None) -> Any:
    configurable = dict(config["configurable"])
    if checkpoint:
        configurable.update(checkpoint_id=checkpoint, checkpoint_ns="")
    return graph.get_state({"configurable": configurable})


def _checkpoint_id(snapshot: Any) -> str | None:
    if snapshot is None or not snapshot.config:
        return None
    found = snapshot.config.get("configurable", {}).get("checkpoint_id")
    return found if isinstance(found, str) else None


def _step_of(snapshot: Any) -> int:
    step = (snapshot.metadata or {}).get("step", 0)
    return max(int(step), 0)


def _create(
    graph: Any,
    workflow: Workflow,
    config: Mapping[str, Any],
    run_id: str,
    head: str | None,
    input: Any,
) -> RunRecord:
    """Create the mirror run: at ``head`` (a fork) or at the thread's latest checkpoint."""
    snapshot = _snapshot(graph, config, head)
    at = _checkpoint_id(snapshot)
    step = _step_of(snapshot) if at else 0
    values = readable(snapshot.values) if at else readable(input if input is not None else {})
    if not isinstance(values, dict):
        values = {"input": values}
    node = (snapshot.next[0] if snapshot.next else END) if at else workflow.entry
    now = time.time()
    record = RunRecord(
        run_id,
        workflow.name,
        workflow.shape,
        Status.RUNNING,
        node,
        step,
        1,
        workflow.max_steps,
        now,
        now,
    )
    payload: dict[str, Any] = {
        "graph": workflow.name,
        "state": values,
        "max_steps": record.max_steps,
        "langgraph": {"thread_id": config["configurable"]["thread_id"]},
    }
    if head:
        parent = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        payload["forked_from"] = {"checkpoint_id": head, "parent": parent, "step": step}
    started = Event(run_id, 1, step, EventType.RUN_STARTED, node, payload, now)
    workflow.checkpointer.create_run(record, CheckpointWrite(step, node, dumps(values)), [started])
    return workflow.checkpointer.get_run(run_id)


class LangGraphRun(Run):
    """One branch of a LangGraph thread, as an agentnb run (made by :func:`attach`).

    Reading (``status``, ``state``, ``events``, ``history()``, ``decisions()``) reads the
    mirror; driving (``step``/``astep``, ``run``/``arun``, ``stream``/``astream``) and
    deciding (``approve``, ``reject``, ``respond``, ``decide``) drive LangGraph and then
    mirror what it saved. ``thread_state()`` and ``thread_history()`` are LangGraph's own
    ``get_state`` / ``get_state_history`` of this branch, untouched.
    """

    def __init__(
        self,
        workflow: Any,
        record: RunRecord,
        *,
        graph: Any,
        config: Mapping[str, Any],
        input: Any = None,
    ) -> None:
        super().__init__(workflow, record)
        self.graph = graph
        self.config: dict[str, Any] = {"configurable": dict(config["configurable"])}
        self.input = input
        self._lock = threading.RLock()  # one sync at a time (kernel, relay, drive threads)
        self._head: Any = None  # the last LangGraph snapshot mirrored
        self._mirrored: list[str] = []  # checkpoint ids mirrored, oldest first
        self._answers: dict[str, Any] = {}  # interrupt id -> answer, until the resume
        self._passing = False  # mirroring the edit an approval made: it is not a new pause
        self._driving = False  # a drive holds the mirror's lease until it ends
        self._control: Any = None  # the drive's LangGraph RunControl: what Stop drains
        self._results: dict[str, list[tuple[str, Any]]] = {}  # child run -> task results
        self._touched: dict[str, None] = {}  # the child runs the drive in progress moved
        fork = None
        if "@" in self.run_id:
            fork = self.run_id.rpartition("@")[2]
        at = _snapshot(graph, self.config, fork)
        if _checkpoint_id(at):
            self._head = at
            self._mirrored.append(_checkpoint_id(at) or "")
        # A branch starts where it was forked: what other branches saved after that
        # checkpoint before this one existed is theirs, not this branch's continuation.
        self._others: set[str] = set()
        if fork:
            self._others = {
                _checkpoint_id(s) or "" for s in graph.get_state_history(self.config)
            } - {fork}

    # -- LangGraph's own view ---------------------------------------------------------------

    @property
    def thread_id(self) -> str:
        return str(self.config["configurable"]["thread_id"])

    @property
    def head_config(self) -> dict[str, Any]:
        """The config of this branch's latest checkpoint (what Step continues from).

        The thread's own config while this branch is the thread's latest; the checkpoint
        id of the head once it is not (continuing there is LangGraph's time travel)."""
        configurable = dict(self.config["configurable"])
        at = _checkpoint_id(self._head)
        latest = _checkpoint_id(self.graph.get_state(self.config))
        if at and at != latest:
            configurable.update(checkpoint_id=at, checkpoint_ns="")
        return {"configurable": configurable}

    def thread_state(self) -> Any:
        """LangGraph's ``get_state`` at this branch's head."""
        return self.graph.get_state(self.head_config)

    def thread_history(self) -> list[Any]:
        """LangGraph's snapshots of this branch, oldest first (its parents, from the head)."""
        by_id = {_checkpoint_id(s): s for s in self.graph.get_state_history(self.config)}
        chain, at = [], self._head
        while at is not None:
            chain.append(at)
            parent = (at.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            at = by_id.get(parent)
        return chain[::-1]

    def branches(self) -> dict[str, list[str]]:
        """The thread's tree: checkpoint id -> the ids of its children, oldest first."""
        tree: dict[str, list[str]] = {}
        for snap in reversed(list(self.graph.get_state_history(self.config))):
            parent = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            tree.setdefault(_checkpoint_id(snap) or "", [])
            if parent:
                tree.setdefault(parent, []).append(_checkpoint_id(snap) or "")
        return tree

    def diagram(self) -> Diagram:
        """The diagram of the LangGraph graph (what the panel draws)."""
        return diagram_of(self.graph, title=self.workflow.name)

    def view(self, **options: Any) -> Any:
        """The live panel: RunView over the mirror, drawing the LangGraph graph.

        The panel never continues an approved LangGraph run with an agentnb worker: an
        approval here resumes the thread itself.
        """
        from agentnb.widgets import RunView

        options.setdefault("title", f"{self.workflow.name} · thread {self.thread_id}")
        return RunView(self, diagram=self.diagram(), continue_after_approval=False, **options)

    # -- mirroring ----------------------------------------------------------------------------

    def _descendants(self) -> list[tuple[Any, Any]]:
        """``(parent, snapshot)`` for each snapshot saved on this branch after the head,
        following the newest child each time; the parent as it reads now (its tasks carry
        their results once they ran)."""
        history = list(self.graph.get_state_history(self.config))  # newest first
        by_id = {_checkpoint_id(s): s for s in history}
        children: dict[str, list[Any]] = {}
        for snap in history:
            parent = (snap.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            if parent and _checkpoint_id(snap) not in self._others:
                children.setdefault(parent, []).append(snap)
        chain: list[tuple[Any, Any]] = []
        at = self._head
        if at is None:
            roots = [s for s in history if not s.parent_config]
            if not roots:
                return []
            at = roots[-1]
            chain.append((None, at))
        while children.get(_checkpoint_id(at) or ""):
            parent = by_id.get(_checkpoint_id(at), at)
            at = children[_checkpoint_id(at) or ""][0]
            chain.append((parent, at))
        return chain

    def sync(self) -> None:
        """Mirror what LangGraph saved on this branch since the last sync (any process's)."""
        with self._lock:
            for parent, snap in self._descendants():
                self._mirror(parent, snap)
            self._mirror_interrupts()
        self._sync(self._store.get_run(self.run_id))

    def _hold_head(self) -> None:
        """Pause a new mirror whose head waits before an ``interrupt_before`` node (a fork,
        or a thread LangGraph paused before it was attached); complete one whose head has
        nothing left to run (a finished thread, or a fork whose edit routed to the end)."""
        head = self._head
        if head is not None and not head.next and not head.tasks:
            self._append(
                self.run_id,
                [(EventType.COMPLETED, END, {"checkpoint_id": _checkpoint_id(head)})],
                status=Status.COMPLETED,
                node=END,
            )
            return
        before = interrupts_of(self.graph, "before")
        held = [n for n in (head.next if head is not None else ()) if before == "*" or n in before]
        if not held or any(t.interrupts for t in head.tasks):
            return
        at = _checkpoint_id(head)
        record = self._store.get_run(self.run_id)
        values = readable(head.values)
        event = Event(
            self.run_id,
            record.seq + 1,
            record.step,
            EventType.INTERRUPTED,
            held[0],
            {"when": "before", "digest": at, "state": values},
            time.time(),
        )
        change = StepCommit(
            Status.PENDING, held[0], record.step, [event], pending_digest=at, release=True
        )
        owned = self._store.acquire(self.run_id, self.owner, lease_seconds=_LEASE)
        self._store.commit(self.run_id, owned.fence, change, lease_seconds=_LEASE)

    def _mirror_interrupts(self) -> None:
        """Hold the interrupts raised at the head since it was mirrored: LangGraph keeps a
        node's ``interrupt(...)`` as a write of the checkpoint it ran from, not as a new one."""
        at = _checkpoint_id(self._head)
        if at is None:
            return
        fresh = _snapshot(self.graph, self.config, at)
        raised = [(t, i) for t in fresh.tasks for i in t.interrupts]
        record = self._store.get_run(self.run_id)
        held = {t.task_id for t in self._store.pending_tasks(self.run_id)}
        new = [(t, i) for t, i in raised if i.id not in held]
        if not new or record.status in (Status.REJECTED, Status.COMPLETED):
            return
        self._head = fresh
        values = readable(fresh.values)
        values = values if isinstance(values, dict) else {"value": values}
        events = [
            Event(
                self.run_id,
                record.seq + k + 1,
                record.step,
                EventType.INTERRUPTED,
                task.name,
                _question(found, at, values),
                time.time(),
            )
            for k, (task, found) in enumerate(new)
        ]
        change = StepCommit(
            Status.PENDING,
            new[0][0].name,
            record.step,
            events,
            pending_digest=at,
            release=not self._driving,
            holds=[(found.id, task.name, at) for task, found in new],
        )
        owned = self._store.acquire(self.run_id, self.owner, lease_seconds=_LEASE)
        self._store.commit(self.run_id, owned.fence, change, lease_seconds=_LEASE)
        if self.workflow.listeners:
            self.workflow._notify(events)

    def _mirror(self, before: Any, snap: Any) -> None:
        at = _checkpoint_id(snap)
        self._head = snap
        if at in self._mirrored:
            return
        self._mirrored.append(at or "")
        record = self._store.get_run(self.run_id)
        if record.status in (Status.REJECTED, Status.COMPLETED) and not snap.next:
            return  # a rejection's clearing write, or a finished thread: nothing new to show
        if (snap.metadata or {}).get("source") == "fork":
            return  # LangGraph's copy of a checkpoint it continues from: the same state
        # The thread's input and first checkpoint are the mirror's step 0 (run_started).
        absorbed = _step_of(snap) <= record.step and (snap.metadata or {}).get("source") != "update"
        step = record.step if absorbed else max(_step_of(snap), record.step + 1)
        values = readable(snap.values)
        values = values if isinstance(values, dict) else {"value": values}
        source = (snap.metadata or {}).get("source")
        nxt = list(snap.next)
        leads = nxt or [END]
        seqs = iter(range(record.seq + 1, record.seq + 10**6))
        now = time.time()
        events: list[Event] = []

        def add(kind: str, node: str | None, payload: dict[str, Any]) -> None:
            events.append(Event(self.run_id, next(seqs), step, kind, node, payload, now))

        ran: list[str] = []
        if absorbed:
            pass
        elif source == "loop" and before is not None:
            for task in before.tasks:
                if task.result is None and not task.error:
                    continue
                ran.append(task.name)
                payload: dict[str, Any] = {
                    "delta": readable(task.result or {}),
                    "next": leads[0],
                    "task": task.name,
                    "checkpoint_id": at,
                }
                if len(leads) > 1:
                    payload["to"] = leads
                add(EventType.STATE_UPDATE, task.name, payload)
        else:  # update_state, a new input: what changed, from the two snapshots
            old = readable(before.values) if before is not None else {}
            delta = {
                k: v for k, v in values.items() if not isinstance(old, dict) or old.get(k) != v
            }
            add(
                EventType.STATE_UPDATE,
                None,
                {"delta": delta, "next": leads[0], "source": source, "checkpoint_id": at},
            )
        status, node, digest, holds = Status.RUNNING, leads[0], None, []
        interrupts = [(t, i) for t in snap.tasks for i in t.interrupts]
        before_nodes = interrupts_of(self.graph, "before")
        after_nodes = interrupts_of(self.graph, "after")
        held_before = [n for n in nxt if before_nodes == "*" or n in before_nodes]
        held_after = [n for n in ran if after_nodes == "*" or n in after_nodes]
        if interrupts:
            status, digest = Status.PENDING, at
            for task, found in interrupts:
                holds.append((found.id, task.name, at or ""))
                add(
                    EventType.INTERRUPTED,
                    task.name,
                    _question(found, at, values),
                )
                node = task.name
        elif self._passing:
            pass
        elif nxt and held_after:
            status, digest = Status.PENDING, at
            add(
                EventType.INTERRUPTED,
                nxt[0],
                {"when": "after", "after": held_after[0], "digest": at, "state": values},
            )
        elif held_before:
            status, digest, node = Status.PENDING, at, held_before[0]
            add(EventType.INTERRUPTED, node, {"when": "before", "digest": at, "state": values})
        elif not nxt:
            status, node = Status.COMPLETED, END
            add(EventType.COMPLETED, END, {"checkpoint_id": at})
        if not events and absorbed:
            return  # the run's start says it all
        if not events:  # a checkpoint with nothing to say (a superstep that wrote nothing)
            add("checkpoint", None, {"source": source, "checkpoint_id": at})
        tasks = {"nodes": nxt, "sends": [], "waiting": []} if len(nxt) > 1 else None
        change = StepCommit(
            status,
            node,
            step,
            events,
            checkpoint=None
            if absorbed
            else CheckpointWrite(
                step, node, dumps(values), None if tasks is None else dumps(tasks)
            ),
            pending_digest=digest,
            release=not self._driving,
            holds=holds,
        )
        owned = self._store.acquire(self.run_id, self.owner, lease_seconds=_LEASE)
        self._store.commit(self.run_id, owned.fence, change, lease_seconds=_LEASE)
        if self.workflow.listeners:
            self.workflow._notify(events)

    def _append(
        self,
        run_id: str,
        items: list[tuple[str, str | None, dict[str, Any]]],
        *,
        status: str | None = None,
        node: str | None = None,
        step: int | None = None,
        write: Any = None,
    ) -> list[Event]:
        """Commit ``items`` (kind, node, payload) as events of mirror run ``run_id``; its
        status, node and step stay as they are unless given."""
        with self._lock:
            record = self._store.get_run(run_id)
            step = record.step if step is None else step
            now = time.time()
            events = [
                Event(run_id, record.seq + k + 1, step, kind, at, payload, now)
                for k, (kind, at, payload) in enumerate(items)
            ]
            change = StepCommit(
                Status(status or record.status),
                record.node if node is None else node,
                step,
                events,
                checkpoint=write,
                release=run_id != self.run_id or not self._driving,
            )
            owned = self._store.acquire(run_id, self.owner, lease_seconds=_LEASE)
            self._store.commit(run_id, owned.fence, change, lease_seconds=_LEASE)
        return events

    def _note(self, kind: str, node: str | None, payload: dict[str, Any]) -> None:
        """Commit one event of the drive in progress (a node starting, inside a subgraph)."""
        events = self._append(self.run_id, [(kind, node, payload)])
        if self.workflow.listeners:
            self.workflow._notify(events)

    # -- subgraphs: each subgraph task is a child run, as agentnb's own -------------------------

    def _child_of(self, namespace: tuple[str, ...]) -> tuple[str, Workflow] | None:
        """The mirror run and workflow of LangGraph namespace ``namespace`` (its
        ``checkpoint_ns``, split): ``("sub:<task id>",)`` is child ``<run id>/sub@<task id>``,
        named as agentnb names a subgraph task's run (``<parent>/<task>@<suffix>``, which
        ``run.children()`` and the panel find). ``None`` for a graph a node's function calls
        (not a node of its own: not drawn, not mirrored)."""
        workflow, run_id = self.workflow, self.run_id
        for part in namespace:
            node, _, task = part.partition(":")
            spec = workflow.nodes.get(node)
            if spec is None or spec.subgraph is None:
                return None
            workflow, run_id = workflow._child(node), f"{run_id}/{node}@{task}"
        return run_id, workflow

    def _subgraph_event(self, namespace: tuple[str, ...], kind: str, payload: Any) -> None:
        """Mirror one ``debug`` event LangGraph streamed from inside a subgraph onto its
        child run: ``task`` starts a node, ``task_result`` is held until the subgraph's
        next ``checkpoint`` says where it leads (as the parent's steps are mirrored), an
        interrupt or an error shows at once."""
        found = self._child_of(namespace)
        if found is None or not isinstance(payload, Mapping):
            return
        child, workflow = found
        try:
            record: RunRecord | None = self._store.get_run(child)
        except RunNotFound:
            record = None
        name = payload.get("name")
        if kind == "checkpoint":
            self._subgraph_checkpoint(namespace, child, workflow, record, payload)
        elif record is None or not isinstance(name, str):
            return
        elif kind == "task":
            self._touched[child] = None
            self._append(
                child,
                [(EventType.NODE_START, name, {"task": name, "langgraph_task": payload.get("id")})],
                status=Status.RUNNING,
                node=name,
            )
        elif kind == "task_result" and payload.get("error"):
            error = {"type": "LangGraph", "message": str(payload["error"])}
            self._append(child, [(EventType.FAILED, name, {"error": error})], status=Status.FAILED)
        elif kind == "task_result" and payload.get("interrupts"):
            saved = self._store.checkpoint(child, record.step)
            asked: list[tuple[str, str | None, dict[str, Any]]] = [
                (
                    EventType.INTERRUPTED,
                    name,
                    {
                        "when": "input",
                        "question": _interrupt_text(raised.get("value")),
                        "value": readable(raised.get("value")),
                        "task": raised.get("id"),
                        "state": saved.state,
                    },
                )
                for raised in payload["interrupts"]
                if isinstance(raised, Mapping)
            ]
            if asked:  # answered from the root, as LangGraph resumes it
                self._append(child, asked, status=Status.PENDING, node=name)
        elif kind == "task_result":
            self._results.setdefault(child, []).append((name, payload.get("result")))

    def _subgraph_checkpoint(
        self,
        namespace: tuple[str, ...],
        child: str,
        workflow: Workflow,
        record: RunRecord | None,
        payload: Mapping[str, Any],
    ) -> None:
        """A subgraph's checkpoint: its child run starts (its first), or takes one step."""
        step = int((payload.get("metadata") or {}).get("step", 0))
        at = ((payload.get("config") or {}).get("configurable") or {}).get("checkpoint_id")
        values = readable(payload.get("values") or {})
        values = values if isinstance(values, dict) else {"value": values}
        nxt = [n for n in payload.get("next") or () if isinstance(n, str)]
        leads = nxt or [END]
        if record is None:
            if step < 0:
                return  # its input, before the reducers: the next checkpoint is the start
            now = time.time()
            started = {
                "graph": workflow.name,
                "state": values,
                "max_steps": workflow.max_steps,
                "langgraph": {"checkpoint_ns": "|".join(namespace), "checkpoint_id": at},
            }
            self._store.create_run(
                RunRecord(
                    child,
                    workflow.name,
                    workflow.shape,
                    Status.RUNNING,
                    leads[0],
                    step,
                    1,
                    workflow.max_steps,
                    now,
                    now,
                ),
                CheckpointWrite(step, leads[0], dumps(values)),
                [Event(child, 1, step, EventType.RUN_STARTED, leads[0], started, now)],
            )
            self._touched[child] = None
            return
        if step <= record.step:
            return  # the checkpoint a resume starts from, streamed again
        items: list[tuple[str, str | None, dict[str, Any]]] = []
        for name, result in self._results.pop(child, []):
            update = {"delta": readable(result or {}), "next": leads[0], "task": name}
            if len(leads) > 1:
                update["to"] = leads
            items.append((EventType.STATE_UPDATE, name, {**update, "checkpoint_id": at}))
        if not items:
            items.append(("checkpoint", None, {"checkpoint_id": at}))
        if not nxt:
            items.append((EventType.COMPLETED, END, {"checkpoint_id": at}))
        tasks = {"nodes": nxt, "sends": [], "waiting": []} if len(nxt) > 1 else None
        self._append(
            child,
            items,
            status=Status.RUNNING if nxt else Status.COMPLETED,
            node=leads[0],
            step=step,
            write=CheckpointWrite(
                step, leads[0], dumps(values), None if tasks is None else dumps(tasks)
            ),
        )

    # -- driving ----------------------------------------------------------------------------

    def _drive(  # LangGraph drives; agentnb's driver never runs
        self, max_nodes: int | None, mode: str = "events", halt: Any = None, leased: bool = False
    ) -> AsyncIterator[Any]:
        return self._astream(one=max_nodes == 1)

    def _first_input(self) -> Any:
        return self.input if self._head is None else None

    def _stream_sync(self, payload: Any, *, one: bool, emit: Callable[[Event], None]) -> None:
        """Run LangGraph (this thread), mirroring as it goes; ``emit`` each node start."""
        # The mirror's lease, held for the whole drive: another agentnb process sharing the
        # store is refused (RunBusy) rather than driving the thread beside this one.
        owned = self._store.acquire(self.run_id, self.owner, lease_seconds=_LEASE)
        self._driving = True
        try:
            self._stream_leased(payload, one=one, emit=emit)
        finally:
            self._driving = False
            self._control = None
            self._results.clear()
            self._store.release(self.run_id, owned.fence)

    def _stream_leased(self, payload: Any, *, one: bool, emit: Callable[[Event], None]) -> None:
        from langgraph.errors import GraphDrained

        # durability="sync": each checkpoint is saved before the next superstep starts, so
        # the history the mirror reads is never behind the tasks the stream reports.
        options: dict[str, Any] = {"stream_mode": _MODES, "subgraphs": True, "durability": "sync"}
        options["control"] = self._control  # Stop asks LangGraph to drain (see stop())
        if one:
            options["interrupt_after"] = "*"
        self._touched = {}
        try:
            for namespace, mode, chunk in self.graph.stream(payload, self.head_config, **options):
                if mode != "debug":
                    continue
                kind = chunk.get("type")
                inner = chunk.get("payload") or {}
                if namespace:
                    self._subgraph_event(tuple(namespace), str(kind), inner)
                path = [part.partition(":")[0] for part in namespace]
                if kind == "task":
                    node = "/".join([*path, str(inner.get("name"))])
                    self._note(
                        EventType.NODE_START,
                        node if not path else path[0],
                        {"task": node, "langgraph_task": inner.get("id")},
                    )
                    emit(
                        Event(
                            self.run_id,
                            0,
                            0,
                            EventType.NODE_START,
                            path[0] if path else node,
                            {"task": node},
                            time.time(),
                        )
                    )
                elif kind == "checkpoint" and not path:
                    self.sync()
        except GraphDrained as drained:
            self.sync()  # the supersteps that finished are saved: mirrored first
            self._stopped(drained.reason)
            return
        self.sync()

    def _stopped(self, reason: str) -> None:
        """LangGraph drained the drive (Stop): the mirror and its open child runs record it
        ``cancelled``, as agentnb records a stopped run; Step or Run continues the thread."""
        said = {"reason": "stopped", "langgraph": f"drained: {reason}"}
        for child in self._touched:
            if self._store.get_run(child).status == Status.RUNNING:
                self._append(child, [(EventType.CANCELLED, None, said)], status=Status.CANCELLED)
        if self._store.get_run(self.run_id).status == Status.RUNNING:
            events = self._append(
                self.run_id, [(EventType.CANCELLED, None, said)], status=Status.CANCELLED
            )
            if self.workflow.listeners:
                self.workflow._notify(events)

    def stop(self, reason: str = "stopped") -> bool:
        """Ask the drive in progress to stop at LangGraph's next superstep boundary.

        LangGraph's own cooperative stop (``RunControl.request_drain``): the superstep in
        flight — inside a subgraph, the subgraph's — finishes and is saved, the next one
        does not start, and the run is recorded ``cancelled``. Safe from any thread.
        Returns whether a drive was in progress to stop.
        """
        control = self._control
        if control is None:
            return False
        control.request_drain(reason)
        return True

    async def _astream(self, *, one: bool, payload: Any = None) -> AsyncIterator[Event]:
        self.sync()
        record = self._store.get_run(self.run_id)
        if record.status not in (Status.RUNNING, Status.APPROVED, Status.CANCELLED):
            return
        first = payload if payload is not None else self._first_input()
        if self._head is not None and not self._head.next and payload is None:
            return
        seen = self._store.get_run(self.run_id).seq
        # LangGraph's sync stream runs in a thread of its own (a sync saver such as
        # SqliteSaver has no async API); what it reports comes back to this loop.
        found: asyncio.Queue[Event | BaseException | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def put(item: Event | BaseException | None) -> None:
            loop.call_soon_threadsafe(found.put_nowait, item)

        def work() -> None:
            try:
                self._stream_sync(first, one=one, emit=put)
            except BaseException as exc:  # handed to the awaiting side, raised there
                put(exc)
            finally:
                put(None)

        from langgraph.runtime import RunControl

        self._control = RunControl()
        worker = threading.Thread(target=work, name=f"langgraph-{self.run_id[:8]}", daemon=True)
        worker.start()
        try:
            while (item := await found.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item
        except asyncio.CancelledError:
            # The panel's Stop cancels this task; LangGraph's thread cannot be cancelled,
            # so it is asked to drain, and waited for: the run is cancelled at a superstep
            # boundary, its lease given back, before the cancellation goes on.
            self.stop()
            while (item := await found.get()) is not None:
                pass
            raise
        for event in self._store.events(self.run_id, after=seen):
            if event.type != EventType.NODE_START:
                yield event
        self._sync(self._store.get_run(self.run_id))

    async def astep(self) -> StepResult:
        """Run one superstep of the thread (``interrupt_after="*"`` for this call)."""
        events = [e async for e in self._astream(one=True)]
        return self._result(events)

    async def arun(self) -> LangGraphRun:
        """Run the thread to its next pause (an interrupt) or its end."""
        async for _ in self._astream(one=False):
            pass
        return self

    def _result(self, events: list[Event]) -> StepResult:
        record = self.record
        tasks = {
            str(e.payload.get("task", e.node)): e.payload.get("delta") or {}
            for e in events
            if e.type == EventType.STATE_UPDATE
        }
        started = [e.node for e in events if e.type == EventType.NODE_START]
        first = started[0] if started else next(iter(tasks), None)
        return StepResult(
            run_id=self.run_id,
            node=first,
            delta=next(iter(tasks.values())) if len(tasks) == 1 else None,
            status=record.status,
            next=record.node,
            events=events,
            tasks=tasks,
        )

    # -- deciding -----------------------------------------------------------------------------

    def decide(
        self,
        decision: str,
        *,
        by: str,
        comment: str | None = None,
        expected_digest: str | None = None,
        task: str | None = None,
        update: dict[str, Any] | None = None,
    ) -> Decision:
        """Approve or reject the pause shown, bound to its checkpoint id (``expected_digest``).

        The agentnb store decides exactly once and audits the attempt; then LangGraph is
        resumed (approved: edits through ``update_state`` first, then on to the next pause)
        or ended (rejected: ``update_state(config, None, as_node=END)``).
        """
        self.sync()  # what happened in LangGraph since the pause was shown counts
        edit = DecisionEdit(update=update, approved_digest=expected_digest) if update else None
        decided = self._store.decide(
            self.run_id,
            decision,
            by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            edit=edit,
        )
        self._after_decision(decision, update, decided)
        return decided

    def respond(  # the same arguments; tasks are LangGraph's interrupt ids
        self,
        value: Any,
        *,
        by: str,
        comment: str | None = None,
        task: str | None = None,
        expected_digest: str | None = None,
    ) -> Decision:
        """Answer the dynamic ``interrupt(...)`` named ``task`` (its interrupt id; may be left
        out when one waits). Once every pending interrupt is answered the thread resumes
        with ``Command(resume={id: answer, ...})``."""
        self.sync()
        if task is None:
            waiting = [t.task_id for t in self.pending()]
            task = waiting[0] if len(waiting) == 1 else None
        dumps(readable(value), root="answer")  # refused before anything is recorded
        decided = self._store.decide(
            self.run_id,
            "approved",
            by,
            comment=comment,
            expected_digest=expected_digest,
            task=task,
            edit=DecisionEdit(update={"answer": readable(value)}),
        )
        self._answers[task or ""] = value
        self._after_decision("approved", None, decided)
        return decided

    def _after_decision(
        self, decision: str, update: dict[str, Any] | None, decided: Decision
    ) -> None:
        record = self._store.get_run(self.run_id)
        shown = decided.pending_digest
        with self._lock:
            moved = self._descendants()
        now = _checkpoint_id(moved[-1][1]) if moved else None
        if now is not None and shown and now != shown:
            # The store decided, but LangGraph's thread moved on in between (another process
            # drove it without agentnb): refuse to act on a checkpoint no longer the head.
            raise StaleApproval(self.run_id, shown, now)
        if decision == "rejected":
            from langgraph.graph import END as LG_END_NODE

            self.graph.update_state(self.head_config, None, as_node=LG_END_NODE)
            self.sync()
            return
        if record.status != Status.APPROVED:
            return  # other held interrupts still wait for their answers
        resume: Any = None
        if any(t.interrupts for t in self._head.tasks):
            from langgraph.types import Command

            answers = {}
            for t in self._head.tasks:
                for found in t.interrupts:
                    answers[found.id] = self._answer(found.id)
            self._answers.clear()
            resume = Command(resume=answers)
        elif update:  # the approved edit: LangGraph saves it as a checkpoint, not a new pause
            self.graph.update_state(self.head_config, update)
            self._passing = True
            try:
                self.sync()
            finally:
                self._passing = False
        from agentnb._aio import run_sync

        async def go() -> None:
            async for _ in self._astream(one=False, payload=resume):
                pass

        run_sync(go())

    def _answer(self, interrupt_id: str) -> Any:
        if interrupt_id in self._answers:
            return self._answers[interrupt_id]
        for d in reversed(self.decisions()):  # answered from another process: the audit
            if d.accepted and d.edit and isinstance(d.edit.get("update"), dict):
                return d.edit["update"].get("answer")
        return None

    # -- editing and time travel ----------------------------------------------------------------

    def update_state(self, values: dict[str, Any] | None, *, as_node: str | None = None) -> None:
        """LangGraph's ``update_state`` on this branch's head, mirrored as a step."""
        record = self._store.get_run(self.run_id)
        if record.status not in (Status.RUNNING, Status.CANCELLED, Status.COMPLETED):
            raise AgentnbError(
                f"run {self.run_id!r} is {record.status}: decide the pause first "
                "(approve with edits changes the state it shows)"
            )
        self.graph.update_state(self.head_config, values, as_node=as_node)
        self.sync()

    def fork(  # type: ignore[override]  # LangGraph's checkpoint ids, not agentnb steps
        self,
        checkpoint_id: str | int,
        *,
        update: dict[str, Any] | None = None,
        as_node: str | None = None,
    ) -> LangGraphRun:
        """Continue from an older checkpoint of this thread: a branch LangGraph keeps, shown
        as a run of its own (``step`` numbers: the agentnb step of this branch)."""
        if isinstance(checkpoint_id, int):
            chosen = [s for s in self.thread_history() if _step_of(s) == checkpoint_id]
            if not chosen:
                raise AgentnbError(f"run {self.run_id!r} has no step {checkpoint_id}")
            checkpoint_id = _checkpoint_id(chosen[-1]) or ""
        config = {
            "configurable": {
                **self.config["configurable"],
                "checkpoint_id": checkpoint_id,
                "checkpoint_ns": "",
            }
        }
        if update is not None:
            config = self.graph.update_state(config, update, as_node=as_node)
        return attach(self.graph, config, store=self._store, name=self.workflow.name)

    def children(self) -> list[Run]:
        """The mirror runs of this branch's subgraph tasks, oldest first: one per LangGraph
        ``checkpoint_ns`` a drive streamed (``<run id>/<node>@<task id>``), each holding
        that subgraph's steps as its own run's (read-only: LangGraph drives them)."""
        return super().children()
