"""Bring your Burr application: draw it, step it and approve it in agentnb's panel.

``pip install "agentnb[burr]"`` (Apache Burr, pinned). A built Burr ``Application``
becomes a :class:`BurrRun`: the same handle and the same panel
(:class:`~agentnb.widgets.RunView`) as an agentnb run.

    >>> from agentnb.interop.burr import attach  # doctest: +SKIP
    >>> run = attach(app, halt_before=["refund"])
    >>> run.view()  # the diagram, the log, the state, Step/Run, Approve/Reject

**Burr stays the truth.** The application's state and position are Burr's; agentnb keeps
a *mirror* of them in an agentnb store (``store=``, in memory by default), fed by Burr's
own lifecycle hooks — ``pre_run_step`` is a node starting, ``post_run_step`` its write
(or its failure) — whoever steps the application: the panel, ``run.step()``, or your own
``app.run()``. agentnb step *k* is the state after Burr's sequence id *k − 1*. The panel
reads the mirror; its buttons drive Burr:

* **Step** is one ``app.step()`` (one action), **Run** steps to the next pause or the end
  (no next action), **Stop** stops between two actions (an action that runs is not
  interrupted; a ``halt_before`` due there still pauses);
* ``halt_before`` (as for ``app.run(halt_before=...)``) pauses before those actions with
  Approve/Reject: Approve runs the action and goes on; Reject ends the mirror ``rejected``
  and agentnb never steps the application again — Burr has no "end" to write, so the
  application itself still names the rejected action as its next;
* a decision is bound to the position it was shown (``<app id>:<sequence id>``): if the
  application moved since, it is refused with :class:`~agentnb.errors.StaleApproval`;
  a second click is refused with :class:`~agentnb.errors.ApprovalNotPending` — both
  audited in the agentnb store (Burr keeps no decisions).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Collection
from typing import Any

from agentnb._json import dumps
from agentnb.errors import AgentnbError, MissingDependency, RunNotFound, StaleApproval
from agentnb.graph.builder import END, StateGraph
from agentnb.graph.run import Run, StepResult
from agentnb.interop._mirrored import mirrored_node, never_routed
from agentnb.interop._readable import readable
from agentnb.render.model import END_ID, START_ID, Diagram, Edge, EdgeKind, Node, NodeKind
from agentnb.store.base import Checkpointer, CheckpointWrite, StepCommit
from agentnb.store.records import Decision, Event, EventType, RunRecord, Status

try:
    from burr.lifecycle import PostRunStepHook, PreRunStepHook
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependency("apache-burr", "burr", "showing Burr applications") from exc

__all__ = ["BurrRun", "attach", "diagram"]

_LEASE = 300.0


def _values(state: Any) -> dict[str, Any]:
    """A Burr ``State`` as the panel shows it: its keys, without Burr's own (``__...``)."""
    shown = readable({k: v for k, v in state.get_all().items() if not k.startswith("__")})
    return shown if isinstance(shown, dict) else {"value": shown}


def _edges(app: Any) -> list[tuple[str, str, str]]:
    """``(from, to, condition name)`` of every transition, in Burr's order."""
    return [(t.from_.name, t.to.name, t.condition.name) for t in app.graph.transitions]


def diagram(app: Any, *, title: str | None = None, halt_before: Collection[str] = ()) -> Diagram:
    """The agentnb diagram of Burr application ``app``: its actions, its entrypoint, each
    transition (a condition's name on its dashed edge; ``default`` drawn as a plain edge),
    an action without a way out leading to the end, ``halt_before`` actions marked as
    approvals."""
    actions = [a.name for a in app.graph.actions]
    entry = app.graph.entrypoint.name
    nodes = [Node(START_ID, "", NodeKind.START)]
    nodes += [
        Node(name, name, NodeKind.NORMAL, entry=name == entry, pause_before=name in halt_before)
        for name in actions
    ]
    edges = [Edge(START_ID, entry)]
    leaving = {source for source, _, _ in _edges(app)}
    for source, target, condition in _edges(app):
        if condition == "default":
            edges.append(Edge(source, target))
        else:
            edges.append(Edge(source, target, EdgeKind.CONDITIONAL, label=condition))
    # Burr ends when no transition applies: certainly after an action with none.
    edges += [Edge(name, END_ID) for name in actions if name not in leaving]
    nodes.append(Node(END_ID, "", NodeKind.END))
    return Diagram(nodes=tuple(nodes), edges=tuple(edges), title=title or "Burr", legend=True)


class _Hook(PreRunStepHook, PostRunStepHook):
    """Burr's lifecycle hooks, mirrored onto ``run`` (in whatever thread steps the app)."""

    def __init__(self, run: BurrRun) -> None:
        self.run = run

    def pre_run_step(self, *, action: Any, sequence_id: int, **_: Any) -> None:
        self.run._started(action.name, sequence_id)

    def post_run_step(
        self, *, action: Any, state: Any, result: Any, exception: Any, sequence_id: int, **_: Any
    ) -> None:
        self.run._stepped(action.name, state, result, exception, sequence_id)


def attach(
    app: Any,
    *,
    halt_before: Collection[str] = (),
    store: Checkpointer | None = None,
    name: str | None = None,
) -> BurrRun:
    """A :class:`BurrRun` of Burr application ``app`` (its ``uid`` is the run id).

    Args:
        app: a built Burr ``Application``. Its lifecycle hooks gain agentnb's mirror.
        halt_before: actions that pause for a decision before they run.
        store: the agentnb store of the mirror and the decisions' audit (a
            ``MemoryCheckpointer`` by default).
        name: the panel's title (``"Burr"`` by default).

    Raises:
        AgentnbError: ``halt_before`` names an action the application does not have.
    """
    actions = [a.name for a in app.graph.actions]
    unknown = sorted(set(halt_before) - set(actions))
    if unknown:
        raise AgentnbError(f"halt_before names no action of the application: {unknown}")
    if store is None:
        from agentnb.store.memory import MemoryCheckpointer

        store = MemoryCheckpointer()
    mirror = StateGraph(name or "Burr", max_steps=10**6)
    for action in actions:
        mirror.add_node(action, mirrored_node(action, "action", "a Burr application", "BurrRun"))
        mirror.add_conditional_edges(
            action, never_routed("a Burr application's transitions run in Burr"), [*actions, END]
        )
    mirror.set_entry_point(app.graph.entrypoint.name)
    workflow = mirror.compile(store, max_steps=10**6)
    run_id = str(app.uid)
    try:
        record = store.get_run(run_id)
    except RunNotFound:
        step = app.sequence_id + 1 if app.sequence_id is not None else 0
        nxt = app.get_next_action()
        node = nxt.name if nxt is not None else END
        values = _values(app.state)
        now = time.time()
        started = {"graph": workflow.name, "state": values, "burr": {"app_id": run_id}}
        record = RunRecord(
            run_id, workflow.name, workflow.shape, Status.RUNNING, node, step, 1,
            workflow.max_steps, now, now,
        )  # fmt: skip
        store.create_run(
            record,
            CheckpointWrite(step, node, dumps(values)),
            [Event(run_id, 1, step, EventType.RUN_STARTED, node, started, now)],
        )
        record = store.get_run(run_id)
    run = BurrRun(workflow, record, app=app, halt_before=halt_before)
    # Burr takes hooks at build time (ApplicationBuilder.with_hooks); a built application
    # keeps them in its adapter set, which gains ours here — replacing the hook of an
    # earlier attach, so each step is mirrored once, onto the newest handle.
    from burr.lifecycle.internal import LifecycleAdapterSet

    kept = [a for a in app._adapter_set.adapters if not isinstance(a, _Hook)]
    app._adapter_set = LifecycleAdapterSet(*kept, _Hook(run))
    run._settle()
    return run


class BurrRun(Run):
    """A Burr application as an agentnb run (made by :func:`attach`)."""

    def __init__(
        self, workflow: Any, record: RunRecord, *, app: Any, halt_before: Collection[str]
    ) -> None:
        super().__init__(workflow, record)
        self.app = app
        self.halt_before = frozenset(halt_before)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._passing: str | None = None  # the approved action, let through once

    @property
    def position(self) -> str:
        """Where the application is: ``<app id>:<sequence id>`` (a pause's digest)."""
        return f"{self.app.uid}:{self.app.sequence_id}"

    def diagram(self) -> Diagram:
        """The diagram of the Burr application (what the panel draws)."""
        return diagram(self.app, title=self.workflow.name, halt_before=self.halt_before)

    def view(self, **options: Any) -> Any:
        """The live panel: RunView over the mirror, drawing the Burr application."""
        from agentnb.widgets import RunView

        options.setdefault("title", f"{self.workflow.name} · app {self.run_id[:12]}")
        return RunView(self, diagram=self.diagram(), continue_after_approval=False, **options)

    def fork(self, *args: Any, **kwargs: Any) -> Run:
        """Refused: a Burr application forks through Burr (a persister and
        ``ApplicationBuilder.initialize_from(..., fork_from_app_id=...)``), which agentnb
        does not mirror yet; an agentnb fork of the mirror would not be Burr's."""
        raise AgentnbError(
            f"run {self.run_id!r} mirrors a Burr application: fork it through Burr "
            "(initialize_from with fork_from_app_id) and attach the new application"
        )

    # -- the mirror ----------------------------------------------------------------------

    def _append(
        self,
        items: list[tuple[str, str | None, dict[str, Any]]],
        *,
        status: str | None = None,
        node: str | None = None,
        step: int | None = None,
        write: CheckpointWrite | None = None,
        digest: str | None = None,
    ) -> None:
        with self._lock:
            record = self._store.get_run(self.run_id)
            step = record.step if step is None else step
            now = time.time()
            events = [
                Event(self.run_id, record.seq + k + 1, step, kind, at, payload, now)
                for k, (kind, at, payload) in enumerate(items)
            ]
            change = StepCommit(
                Status(status or record.status),
                record.node if node is None else node,
                step,
                events,
                checkpoint=write,
                pending_digest=digest,
                release=True,
            )
            owned = self._store.acquire(self.run_id, self.owner, lease_seconds=_LEASE)
            self._store.commit(self.run_id, owned.fence, change, lease_seconds=_LEASE)
        if self.workflow.listeners:
            self.workflow._notify(events)

    def _started(self, action: str, sequence_id: int) -> None:
        """Burr's ``pre_run_step``: ``action`` starts."""
        self._append([(EventType.NODE_START, action, {"sequence_id": sequence_id})],
                     status=Status.RUNNING, node=action)  # fmt: skip

    def _stepped(self, action: str, state: Any, result: Any, error: Any, sequence_id: int) -> None:
        """Burr's ``post_run_step``: ``action`` wrote ``state`` (or raised ``error``)."""
        if error is not None:
            failure = {"type": type(error).__name__, "message": str(error)}
            self._append([(EventType.FAILED, action, {"error": failure})], status=Status.FAILED)
            return
        graph = self.app.graph
        nxt = graph.get_next_node(action, state, graph.entrypoint.name)
        leads = nxt.name if nxt is not None else END
        values = _values(state)
        before = self._store.checkpoint(self.run_id).state
        delta = {k: v for k, v in values.items() if before.get(k) != v}
        update = {"delta": delta, "next": leads, "sequence_id": sequence_id}
        items: list[tuple[str, str | None, dict[str, Any]]] = [
            (EventType.STATE_UPDATE, action, update)
        ]
        if nxt is None:
            items.append((EventType.COMPLETED, END, {}))
        step = sequence_id + 1
        self._append(
            items,
            status=Status.RUNNING if nxt is not None else Status.COMPLETED,
            node=leads,
            step=step,
            write=CheckpointWrite(step, leads, dumps(values)),
        )

    def _settle(self) -> bool:
        """Pause before a ``halt_before`` action, or complete when nothing is next; whether
        the run may go on stepping."""
        record = self._store.get_run(self.run_id)
        if record.status in (Status.PENDING, Status.REJECTED, Status.COMPLETED, Status.FAILED):
            self._sync(record)
            return False
        nxt = self.app.get_next_action()
        if nxt is None:
            self._append([(EventType.COMPLETED, END, {})], status=Status.COMPLETED, node=END)
        elif nxt.name in self.halt_before and self._passing != self.position:
            shown = {"when": "before", "digest": self.position, "state": _values(self.app.state)}
            self._append(
                [(EventType.INTERRUPTED, nxt.name, shown)],
                status=Status.PENDING,
                node=nxt.name,
                digest=self.position,
            )
        else:
            return True
        self._sync(self._store.get_run(self.run_id))
        return False

    # -- driving ---------------------------------------------------------------------------

    def _drive(  # Burr steps; agentnb's driver never runs
        self, max_nodes: int | None, mode: str = "events", halt: Any = None, leased: bool = False
    ) -> AsyncIterator[Any]:
        return self._astream(one=max_nodes == 1)

    def _steps(self, one: bool) -> None:
        """Step Burr in this thread until a pause, the end, a stop, or one action."""
        self._stop.clear()
        while self._settle() and not self._stop.is_set():
            self.app.step()
            self._passing = None
            if one:
                self._settle()
                return
        if self._stop.is_set() and self._store.get_run(self.run_id).status == Status.RUNNING:
            said = {"reason": "stopped", "burr": "between two actions"}
            self._append([(EventType.CANCELLED, None, said)], status=Status.CANCELLED)

    async def _astream(self, *, one: bool) -> AsyncIterator[Event]:
        seen = self._store.get_run(self.run_id).seq
        try:
            await asyncio.to_thread(self._steps, one)
        except asyncio.CancelledError:
            self.stop()  # the panel's Stop: the action in flight ends, the next never starts
            raise
        for event in self._store.events(self.run_id, after=seen):
            yield event
        self._sync(self._store.get_run(self.run_id))

    def stop(self) -> None:
        """Stop the drive in progress before its next action (the one running finishes)."""
        self._stop.set()

    async def astep(self) -> StepResult:
        """Run one Burr action (``app.step()``), or pause before a ``halt_before`` one."""
        events = [e async for e in self._astream(one=True)]
        ran = [e for e in events if e.type == EventType.STATE_UPDATE]
        record = self.record
        return StepResult(
            run_id=self.run_id,
            node=ran[0].node if ran else None,
            delta=ran[0].payload.get("delta") if ran else None,
            status=record.status,
            next=record.node,
            events=events,
            tasks={str(e.node): e.payload.get("delta") or {} for e in ran},
        )

    async def arun(self) -> BurrRun:
        """Step the application to its next pause or its end."""
        async for _ in self._astream(one=False):
            pass
        return self

    # -- deciding ----------------------------------------------------------------------------

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
        """Approve or reject the pause shown, bound to the position it was shown; Approve
        runs the held action and goes on to the next pause or the end."""
        if update:
            raise AgentnbError(
                "a Burr pause is approved as it stands: edit the state with "
                "app.update_state(...) before approving"
            )
        decided = self._store.decide(
            self.run_id, decision, by, comment=comment, expected_digest=expected_digest
        )
        shown = decided.pending_digest
        if shown and shown != self.position:  # the application was stepped elsewhere
            raise StaleApproval(self.run_id, shown, self.position)
        self._sync(self._store.get_run(self.run_id))
        if decision == "approved":
            self._passing = self.position
            from agentnb._aio import run_sync

            async def go() -> None:
                async for _ in self._astream(one=False):
                    pass

            run_sync(go())
        return decided
