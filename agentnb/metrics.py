"""Prometheus metrics for workflows, their circuit breakers and state machines.

Needs the ``metrics`` extra (``pip install "agentnb[metrics]"``: prometheus_client), which is
imported only when a :class:`Metrics` is made::

    from agentnb.metrics import instrument

    metrics = instrument(workflow)     # subscribes to the workflow and its breakers
    metrics.serve(9464)                # http://127.0.0.1:9464/metrics, for Prometheus
    workflow.invoke({"requested": 1000})
    metrics                            # in a notebook: the current values as a table

The series (``graph`` is the workflow's name):

* ``agentnb_state_changes_total{graph,from,to}`` — one per ``state_update`` (``to`` is
  ``END`` when the run finishes), plus ``START`` → entry node when a run starts, so the
  moves into a node add up to the times it was entered. State machines report theirs
  through :meth:`Metrics.observe_transition`.
* ``agentnb_node_duration_seconds{graph,node}`` — histogram, ``node_start`` to the same
  node's ``state_update`` or ``failed`` (so retries, backoff and timeouts are inside it);
  a cancelled execution is not observed.
* ``agentnb_runs_total{graph,status}`` — runs reaching ``completed``, ``rejected``,
  ``failed`` or ``cancelled`` (a cancelled run that is continued counts again when it ends).
* ``agentnb_pending_approvals{graph}`` — up on ``interrupted``, down on ``approved`` or
  ``rejected``, or on any later event of the run (a decision taken in another process).
  Never negative: a decision on a pause this process did not see is not subtracted.
* ``agentnb_approval_wait_seconds{graph,node}`` — histogram, ``interrupted`` to decision.
* ``agentnb_retries_total{graph,node}``, ``agentnb_timeouts_total{graph,node}`` — one per
  ``retry`` / ``timeout`` event.
* ``agentnb_breaker_state{breaker}`` (0 closed, 1 half-open, 2 open),
  ``agentnb_breaker_open_total{breaker}`` (times it opened) and
  ``agentnb_breaker_refused_total{graph,node,breaker}`` (calls refused: ``breaker_open``).
* ``agentnb_state_duration_seconds{graph,state}`` — histogram of the ``seconds`` given to
  :meth:`Metrics.observe_transition`.

Series known from the graph's shape start at 0, so rates and alerts work before the first
run. Listeners are per process: a run is counted by the process driving it. A listener only
queues the event; events are folded into dictionaries in batches (every 256, and before each
scrape), and prometheus_client objects are built only when someone scrapes.
"""

from __future__ import annotations

import bisect
import html
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Self
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from agentnb.errors import AgentnbError, MissingDependency
from agentnb.graph.builder import START
from agentnb.store.records import Event, EventType

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry

    from agentnb.graph.workflow import Workflow
    from agentnb.resilience import BreakerListener, CircuitBreaker

__all__ = ["DURATION_BUCKETS", "WAIT_BUCKETS", "MetricRow", "Metrics", "instrument"]

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
"""Upper bounds (seconds) of node and state durations: from tool calls to slow LLM calls."""
WAIT_BUCKETS = (1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400)
"""Upper bounds (seconds) of approval waits: a person, from seconds to a day."""

BREAKER_STATES = {"closed": 0, "half_open": 1, "open": 2}
RUN_ENDS = frozenset({"completed", "rejected", "failed", "cancelled"})
_NODE_START, _STATE_UPDATE = str(EventType.NODE_START), str(EventType.STATE_UPDATE)
_INTERRUPTED = str(EventType.INTERRUPTED)
_PER_NODE = {str(EventType.RETRY): "retries", str(EventType.TIMEOUT): "timeouts"}
_BATCH = 256
_HOST = "127.0.0.1"
# fmt: off
_FAMILIES = (  # name after agentnb_, prometheus_client family, labels, help
    ("state_changes", "Counter", ("graph", "from", "to"), "Moves between nodes or states."),
    ("runs", "Counter", ("graph", "status"), "Runs that ended, by final status."),
    ("retries", "Counter", ("graph", "node"), "Node attempts that failed and were retried."),
    ("timeouts", "Counter", ("graph", "node"), "Node attempts cancelled at their timeout."),
    ("breaker_open", "Counter", ("breaker",), "Times a circuit breaker opened."),
    ("breaker_refused", "Counter", ("graph", "node", "breaker"),
     "Node calls refused by an open circuit breaker."),
    ("pending_approvals", "Gauge", ("graph",), "Runs paused, waiting for a decision."),
    ("breaker_state", "Gauge", ("breaker",),
     "Circuit breaker state: 0 closed, 1 half-open, 2 open."),
    ("node_duration_seconds", "Histogram", ("graph", "node"),
     "Node execution time, first attempt to outcome."),
    ("approval_wait_seconds", "Histogram", ("graph", "node"), "Time from a pause to its decision."),
    ("state_duration_seconds", "Histogram", ("graph", "state"),
     "Time spent in a state machine's state."),
)
# fmt: on


def _prometheus() -> Any:
    try:
        import prometheus_client
        import prometheus_client.core
        import prometheus_client.exposition
        import prometheus_client.registry
        import prometheus_client.utils
    except ImportError as exc:
        raise MissingDependency("prometheus_client", "metrics", "Prometheus metrics") from exc
    return prometheus_client


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # a scrape is not news
        pass


class MetricRow(NamedTuple):
    """One sample, as :meth:`Metrics.table` lists it."""

    name: str
    labels: dict[str, str]
    value: float


class _Graph:
    """The series of one graph (or state machine); ``on_event`` is its workflows' listener.

    Counters are ``counts[(family, *labels)]``; histograms are ``hists[(family, label)]``,
    a list: a count per bucket (not cumulative, the last is +Inf), then the sum. Labels are
    made strings when scraped, not on the hot path.
    """

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = {"node_duration_seconds": buckets, "state_duration_seconds": buckets}
        self.bounds["approval_wait_seconds"] = WAIT_BUCKETS
        self.lock = threading.Lock()
        self.watched = False  # a workflow reports here (not only a state machine)
        self.counts: dict[tuple[Any, ...], int] = {}  # label values are str
        self.hists: dict[tuple[str, Any], list[float]] = {}
        self.pending: set[str] = set()
        self.paused_at: dict[str, tuple[str, float]] = {}  # run -> (node, at)
        self.started: dict[str, tuple[str | None, float]] = {}  # run -> (node, at)
        self.inbox: list[Event] = []

    def on_event(self, event: Event) -> None:
        # Runs in the worker's thread for every event: only queue it, and fold the queue
        # in batches (list append and slice deletion are atomic).
        inbox = self.inbox
        inbox.append(event)
        if len(inbox) >= _BATCH:
            self.fold()

    def fold(self) -> None:
        with self.lock:
            inbox = self.inbox
            batch = inbox[: len(inbox)]
            del inbox[: len(batch)]
            pending, started, counts = self.pending, self.started, self.counts
            hists, bounds = self.hists, self.bounds["node_duration_seconds"]
            for event in batch:  # the two events of every step inline, the rest in _rare
                kind, run_id = event.type, event.run_id
                if pending and kind != _INTERRUPTED:
                    pending.discard(run_id)  # any later event means the run moved on
                if kind == _NODE_START:
                    started[run_id] = (event.node, event.at)
                elif kind == _STATE_UPDATE:
                    node = event.node
                    key = ("state_changes", node, event.payload.get("next"))
                    counts[key] = counts.get(key, 0) + 1
                    begun = started.pop(run_id, None)
                    if begun is not None and begun[0] == node:
                        took = event.at - begun[1]
                        hist = hists.get(("node_duration_seconds", node))
                        if hist is None:
                            hist = self._hist("node_duration_seconds", node)
                        hist[bisect.bisect_left(bounds, took)] += 1
                        hist[-1] += took if took > 0 else 0.0
                else:
                    self._rare(kind, event)

    def _rare(self, kind: str, event: Event) -> None:
        node, run_id = event.node or "", event.run_id
        key: tuple[str, ...] | None = None
        if kind in _PER_NODE:
            key = (_PER_NODE[kind], node)
        elif kind == EventType.BREAKER_OPEN:
            key = ("breaker_refused", node, str(event.payload.get("breaker")))
        elif kind == EventType.RUN_STARTED:
            key = ("state_changes", START, node)
        elif kind == _INTERRUPTED:
            self.pending.add(run_id)
            self.paused_at[run_id] = (node, event.at)
        elif kind in (EventType.APPROVED, EventType.REJECTED):
            paused = self.paused_at.pop(run_id, None)
            if paused is not None:
                self.observe("approval_wait_seconds", paused[0], event.at - paused[1])
        if kind in RUN_ENDS:  # "rejected" is both a decision and an end
            key = ("runs", kind)
            if kind == EventType.FAILED:
                self._finish_node(run_id, node, event.at)
            self.started.pop(run_id, None)  # a cancelled execution is not observed
        if key is not None:
            self.counts[key] = self.counts.get(key, 0) + 1

    def _finish_node(self, run_id: str, node: str, at: float) -> None:
        started = self.started.pop(run_id, None)
        if started is not None and started[0] == node:
            self.observe("node_duration_seconds", node, at - started[1])

    def _hist(self, family: str, label: str | None) -> list[float]:
        hist = self.hists.get((family, label))
        if hist is None:
            hist = self.hists[family, label] = [0] * (len(self.bounds[family]) + 2)
        return hist

    def observe(self, family: str, label: str, value: float) -> None:
        hist = self._hist(family, label)
        hist[bisect.bisect_left(self.bounds[family], value)] += 1
        hist[-1] += max(0.0, value)

    def transition(self, source: str, target: str, seconds: float | None) -> None:
        self.fold()  # keep events and transitions in order
        with self.lock:
            key = ("state_changes", source, target)
            self.counts[key] = self.counts.get(key, 0) + 1
            if seconds is not None:
                self.observe("state_duration_seconds", source, seconds)

    def declare(self, workflow: Workflow) -> None:
        """Start at 0 the series the workflow's shape makes known."""
        known: list[tuple[str, ...]] = [("runs", status) for status in RUN_ENDS]
        known.append(("state_changes", START, workflow.entry))
        for name, spec in workflow.nodes.items():
            known += [("state_changes", name, nxt) for nxt in workflow.successors(name)]
            if spec.retry is not None and spec.retry.attempts > 1:
                known.append(("retries", name))
            if spec.timeout is not None:
                known.append(("timeouts", name))
            if spec.breaker is not None:
                known.append(("breaker_refused", name, spec.breaker.name))
        paused = [*workflow.interrupts_before]
        paused += [n for a in workflow.interrupts_after for n in workflow.successors(a)]
        with self.lock:
            self.watched = True
            for key in known:
                self.counts.setdefault(key, 0)
            for name in workflow.nodes:
                self._hist("node_duration_seconds", name)
            for name in paused:
                self._hist("approval_wait_seconds", name)

    def snapshot(self, graph: str, out: dict[str, dict[tuple[str, ...], Any]], go: Any) -> None:
        """Add this graph's samples to ``out``: ``{family: {label values: value}}``."""
        self.fold()
        with self.lock:
            for (family, *labels), count in self.counts.items():
                out[family][graph, *map(str, labels)] = count
            if self.watched:
                out["pending_approvals"][graph,] = len(self.pending)
            for (family, label), hist in self.hists.items():
                les = [*map(go, self.bounds[family]), "+Inf"]
                buckets = list(zip(les, itertools.accumulate(hist[:-1]), strict=True))
                out[family][graph, str(label)] = (buckets, hist[-1])


class Metrics:
    """Prometheus metrics of workflows, a collector in one ``CollectorRegistry``.

    Make one with :func:`instrument`. :meth:`serve` exposes it over HTTP on 127.0.0.1,
    :meth:`text` returns the exposition text, and a notebook shows it as a table.

    Args:
        registry: where to register; a fresh ``CollectorRegistry`` when omitted.
        buckets: upper bounds (seconds) of the node and state duration histograms
            (default :data:`DURATION_BUCKETS`).

    Raises:
        MissingDependency: prometheus_client is not installed.
        AgentnbError: ``registry`` already holds agentnb metrics.
    """

    def __init__(
        self, *, registry: CollectorRegistry | None = None, buckets: Sequence[float] = ()
    ) -> None:
        prom = _prometheus()
        self.registry: CollectorRegistry = (
            prom.CollectorRegistry() if registry is None else registry
        )
        self.buckets = tuple(sorted(float(b) for b in buckets or DURATION_BUCKETS))
        self._lock = threading.Lock()
        self._graphs: dict[str, _Graph] = {}
        self._breakers: dict[str, int] = {}
        self._opened: dict[str, int] = {}
        self._unsubscribe: dict[int, Callable[[], None]] = {}
        self._breaker_undo: dict[int, Callable[[], object]] = {}
        self._server: tuple[WSGIServer, threading.Thread] | None = None
        try:
            self.registry.register(self)
        except getattr(prom.registry, "DuplicateTimeseries", ValueError) as exc:
            raise AgentnbError(
                f"this registry already has agentnb metrics ({exc}). Watch more workflows "
                "with the same Metrics (metrics.watch(workflow)), or close the other one."
            ) from exc
        self._registered = True

    def _graph(self, name: str) -> _Graph:
        with self._lock:
            if name not in self._graphs:
                self._graphs[name] = _Graph(self.buckets)
            return self._graphs[name]

    def watch(self, workflow: Workflow) -> Self:
        """Also count ``workflow``'s events and its nodes' circuit breakers; returns self.

        Workflows with the same name share their series; watching one twice does nothing.
        """
        if id(workflow) in self._unsubscribe:
            return self
        graph = self._graph(workflow.name)
        graph.declare(workflow)
        for spec in workflow.nodes.values():
            if spec.breaker is not None and id(spec.breaker) not in self._breaker_undo:
                self._watch_breaker(spec.breaker)
        self._unsubscribe[id(workflow)] = workflow.subscribe(graph.on_event)
        return self

    def _watch_breaker(self, breaker: CircuitBreaker) -> None:
        with self._lock:
            self._breakers[breaker.name] = BREAKER_STATES.get(breaker.state, 0)
            self._opened.setdefault(breaker.name, 0)
        subscribe: Callable[[BreakerListener], object] = breaker.subscribe
        undo = subscribe(self._breaker_moved)
        # A subscribe without an undo leaves a closed Metrics subscribed, ignoring the calls.
        self._breaker_undo[id(breaker)] = undo if callable(undo) else lambda: None

    def _breaker_moved(self, breaker: CircuitBreaker, old: str, new: str) -> None:
        with self._lock:
            if id(breaker) in self._breaker_undo:
                self._breakers[breaker.name] = BREAKER_STATES.get(new, 0)
                if new == "open":
                    self._opened[breaker.name] += 1

    def observe_transition(
        self, machine: str, source: str, target: str, seconds: float | None = None
    ) -> None:
        """Count a state machine's move from ``source`` to ``target``.

        It lands in ``agentnb_state_changes_total`` with ``graph=machine``; ``seconds``
        (time spent in ``source``) goes to ``agentnb_state_duration_seconds``.
        """
        self._graph(machine).transition(source, target, seconds)

    def flush(self) -> None:
        """Fold the events queued so far into the counts (every scrape does it first)."""
        with self._lock:
            graphs = list(self._graphs.values())
        for graph in graphs:
            graph.fold()

    # -- prometheus_client collector -------------------------------------------------------

    def describe(self) -> Iterator[Metric]:
        """The metric families without samples (prometheus_client checks names with it)."""
        return self._families(samples=False)

    def collect(self) -> Iterator[Metric]:
        """The metric families with their current samples (called on every scrape)."""
        return self._families(samples=True)

    def _families(self, *, samples: bool) -> Iterator[Metric]:
        prom = _prometheus()
        values: dict[str, dict[tuple[str, ...], Any]] = {name: {} for name, *_ in _FAMILIES}
        if samples:
            with self._lock:
                graphs = list(self._graphs.items())
                values["breaker_open"] = {(k,): v for k, v in self._opened.items()}
                values["breaker_state"] = {(k,): v for k, v in self._breakers.items()}
            for name, graph in graphs:
                graph.snapshot(name, values, prom.utils.floatToGoString)
        for name, kind, labels, doc in _FAMILIES:
            family = getattr(prom.core, f"{kind}MetricFamily")(
                f"agentnb_{name}", doc, labels=labels
            )
            for key, value in sorted(values[name].items()):
                family.add_metric(list(key), *value if kind == "Histogram" else (value,))
            yield family

    # -- exposition ------------------------------------------------------------------------

    def text(self) -> str:
        """The registry's metrics in the Prometheus text exposition format."""
        return str(_prometheus().generate_latest(self.registry).decode())

    def serve(self, port: int = 0) -> tuple[str, int]:
        """Serve the registry at ``http://127.0.0.1:PORT/metrics`` (``port=0``: any free one).

        Only the loopback interface listens (put a proxy in front to expose it); a daemon
        thread answers. Returns ``(host, port)``; raises AgentnbError if serving already.
        """
        if self.address is not None:
            raise AgentnbError(
                f"metrics are served already at http://{_HOST}:{self.address[1]}/metrics. "
                "Call stop() before serving again."
            )
        prom = _prometheus()
        app = prom.make_wsgi_app(self.registry)
        server = make_server(_HOST, port, app, prom.exposition.ThreadingWSGIServer, _Quiet)
        # A short poll interval so that stop() returns at once rather than in 0.5 s.
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        self._server = server, thread
        return _HOST, int(self._server[0].server_port)

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` while serving, else ``None``."""
        return None if self._server is None else (_HOST, int(self._server[0].server_port))

    def stop(self) -> None:
        """Stop serving and close the listening socket (nothing happens if not serving)."""
        if self._server is not None:
            server, thread = self._server
            self._server = None
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    def close(self) -> None:
        """Stop serving, stop listening to workflows and breakers, leave the registry."""
        self.stop()
        for unsubscribe in self._unsubscribe.values():
            unsubscribe()
        self._unsubscribe.clear()
        self.flush()
        for undo in self._breaker_undo.values():
            undo()
        self._breaker_undo.clear()
        if self._registered:
            self._registered = False
            self.registry.unregister(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- display ---------------------------------------------------------------------------

    def table(self, *, buckets: bool = False) -> list[MetricRow]:
        """The current samples, sorted; histograms as ``_count`` and ``_sum`` (and
        ``_bucket`` samples too with ``buckets=True``)."""
        rows = [
            MetricRow(sample.name, dict(sample.labels), float(sample.value))
            for family in self.collect()
            for sample in family.samples
            if buckets or not sample.name.endswith("_bucket")
        ]
        return sorted(rows, key=lambda r: (r.name, sorted(r.labels.items())))

    def __repr__(self) -> str:
        where = f", serving http://{_HOST}:{self.address[1]}/metrics" if self.address else ""
        count = len(self._unsubscribe)
        return f"<Metrics: {count} workflow{'s' * (count != 1)}{where}>"

    def _repr_html_(self) -> str:
        esc = html.escape
        body = "".join(
            f"<tr><td><code>{esc(row.name)}</code></td><td>{esc(_labels(row.labels))}</td>"
            f'<td style="text-align:right">{esc(_number(row.value))}</td></tr>'
            for row in self.table()
        )
        return (
            f'<table class="agentnb-metrics"><caption>{esc(repr(self))}</caption>'
            "<thead><tr><th>metric</th><th>labels</th><th>value</th></tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        rows = [("metric", "labels", "value")]
        rows += [(row.name, _labels(row.labels), _number(row.value)) for row in self.table()]
        name_w, labels_w = (max(len(r[i]) for r in rows) for i in (0, 1))
        lines = [repr(self), *(f"{n:<{name_w}}  {lb:<{labels_w}}  {v}" for n, lb, v in rows)]
        printer.text("\n".join(lines))


def _labels(labels: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items())


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else f"{value:.6g}"


def instrument(
    workflow: Workflow, *, registry: CollectorRegistry | None = None, buckets: Sequence[float] = ()
) -> Metrics:
    """Count ``workflow``'s events in Prometheus metrics (the series: see the module doc).

    Args:
        workflow: the compiled workflow to watch (add more with :meth:`Metrics.watch`).
        registry: a prometheus_client ``CollectorRegistry``; a fresh one when omitted.
        buckets: upper bounds (seconds) of the duration histograms; default
            :data:`DURATION_BUCKETS`.

    Returns:
        The :class:`Metrics`; close it (or use it as a context manager) to unsubscribe.

    Raises:
        MissingDependency: prometheus_client is not installed.

    Example:
        >>> from agentnb import StateGraph
        >>> wf = StateGraph("hi").add_node("a", lambda s: None).set_entry_point("a").compile()
        >>> with instrument(wf) as metrics:
        ...     _ = wf.invoke({})
        ...     [r.value for r in metrics.table() if r.name == "agentnb_runs_total"
        ...      and r.labels["status"] == "completed"]
        [1.0]
    """
    return Metrics(registry=registry, buckets=buckets).watch(workflow)
