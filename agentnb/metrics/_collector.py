"""The :class:`Metrics` collector: prometheus_client families built from the series on a scrape.

prometheus_client is imported when a :class:`Metrics` is made, not when this module is.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Self

from agentnb.errors import AgentnbError, MissingDependency
from agentnb.metrics._endpoint import HOST, Endpoint
from agentnb.metrics._series import DURATION_BUCKETS, GraphSeries

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry

    from agentnb.fsm.machine import StateMachine
    from agentnb.graph.workflow import Workflow
    from agentnb.resilience import BreakerListener, CircuitBreaker

__all__ = ["BREAKER_STATES", "MetricRow", "Metrics", "instrument"]

BREAKER_STATES = {"closed": 0, "half_open": 1, "open": 2}
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


class MetricRow(NamedTuple):
    """One sample, as :meth:`Metrics.table` lists it.

    Example:
        >>> from agentnb import StateGraph
        >>> from agentnb.metrics import instrument
        >>> graph = StateGraph("hi").add_node("a", lambda state: {}).set_entry_point("a")
        >>> workflow = graph.compile()
        >>> with instrument(workflow) as metrics:
        ...     _ = workflow.invoke({})
        ...     rows = [row for row in metrics.table() if row.name == "agentnb_runs_total"]
        >>> [(row.labels["status"], row.value) for row in rows]
        [('cancelled', 0.0), ('completed', 1.0), ('failed', 0.0), ('rejected', 0.0)]
    """

    name: str
    labels: dict[str, str]
    value: float


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

    Example:
        >>> from agentnb import StateGraph
        >>> from agentnb.metrics import instrument
        >>> graph = StateGraph("hi").add_node("a", lambda state: {}).set_entry_point("a")
        >>> workflow = graph.compile()
        >>> with instrument(workflow) as metrics:
        ...     _ = workflow.invoke({})
        ...     text = metrics.text()  # the Prometheus exposition format
        >>> [line for line in text.splitlines() if 'status="completed"' in line]
        ['agentnb_runs_total{graph="hi",status="completed"} 1.0']
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
        self._graphs: dict[str, GraphSeries] = {}
        self._breakers: dict[str, int] = {}
        self._opened: dict[str, int] = {}
        self._unsubscribe: dict[int, Callable[[], None]] = {}
        self._breaker_undo: dict[int, Callable[[], object]] = {}
        self._server: Endpoint | None = None
        try:
            self.registry.register(self)
        except getattr(prom.registry, "DuplicateTimeseries", ValueError) as exc:
            raise AgentnbError(
                f"this registry already has agentnb metrics ({exc}). Watch more workflows "
                "with the same Metrics (metrics.watch(workflow)), or close the other one."
            ) from exc
        self._registered = True

    def _graph(self, name: str) -> GraphSeries:
        with self._lock:
            if name not in self._graphs:
                self._graphs[name] = GraphSeries(self.buckets)
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

    def watch_machine(self, machine: StateMachine) -> Self:
        """Also count ``machine``'s transitions (from every instance); returns self."""
        if id(machine) not in self._unsubscribe:
            name = machine.name
            self._graph(name)
            self._unsubscribe[id(machine)] = machine.subscribe(
                lambda instance, record: self.observe_transition(name, record.source, record.target)
            )
        return self

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
                f"metrics are served already at http://{HOST}:{self.address[1]}/metrics. "
                "Call stop() before serving again."
            )
        prom = _prometheus()
        app = prom.make_wsgi_app(self.registry)
        self._server = Endpoint(app, port, prom.exposition.ThreadingWSGIServer)
        return HOST, self._server.port

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` while serving, else ``None``."""
        return None if self._server is None else (HOST, self._server.port)

    def stop(self) -> None:
        """Stop serving and close the listening socket (nothing happens if not serving)."""
        if self._server is not None:
            server, self._server = self._server, None
            server.close()

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
        where = f", serving http://{HOST}:{self.address[1]}/metrics" if self.address else ""
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
    workflow: Workflow | StateMachine,
    *,
    registry: CollectorRegistry | None = None,
    buckets: Sequence[float] = (),
) -> Metrics:
    """Count a workflow's events (or a state machine's transitions) in Prometheus metrics.

    The series: see :mod:`agentnb.metrics`.

    Args:
        workflow: the compiled workflow, or the state machine, to watch (add more with
            :meth:`Metrics.watch` / :meth:`Metrics.watch_machine`).
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
    from agentnb.graph.workflow import Workflow

    metrics = Metrics(registry=registry, buckets=buckets)
    if isinstance(workflow, Workflow):
        return metrics.watch(workflow)
    return metrics.watch_machine(workflow)
