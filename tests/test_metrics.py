"""Prometheus metrics: what a scrape of the HTTP endpoint shows after real runs."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from agentnb import END, MemoryCheckpointer, MissingDependency, StateGraph, Workflow
from agentnb.errors import AgentnbError, NodeFailed
from agentnb.metrics import Metrics, instrument
from agentnb.resilience import CircuitBreaker, Retry

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(metrics: Metrics) -> Samples:
    """GET /metrics from the running endpoint; every sample by (name, labels)."""
    assert metrics.address is not None
    host, port = metrics.address
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample; a KeyError (with the near misses) when the series does not exist."""
    key = (name, frozenset(labels.items()))
    if key not in samples:
        near = sorted(str(dict(k[1])) for k in samples if k[0] == name)
        raise KeyError(f"{name}{labels} not scraped; {name} has {near}")
    return samples[key]


def moves(samples: Samples, graph: str, source: str, target: str) -> float:
    return value(samples, "agentnb_state_changes_total", graph=graph, to=target, **{"from": source})


@pytest.fixture
def served() -> Iterator[list[Metrics]]:
    """Metrics made by a test, closed (server stopped) afterwards even if the test fails."""
    made: list[Metrics] = []
    yield made
    for metrics in made:
        metrics.close()


def serve(made: list[Metrics], workflow: Workflow, **kwargs: Any) -> Metrics:
    metrics = instrument(workflow, **kwargs)
    made.append(metrics)
    host, port = metrics.serve()
    assert host == "127.0.0.1"
    assert port > 0
    return metrics


def approval_graph(name: str = "refund") -> Workflow:
    g = StateGraph(name)
    g.add_node("plan", lambda state: {"amount": 1000})
    g.add_node("refund", lambda state: {"status": "done"})
    g.set_entry_point("plan")
    g.add_edge("plan", "refund")
    g.add_interrupt_before("refund")
    return g.compile(MemoryCheckpointer())


def test_approved_run_counts_moves_pending_approvals_waits_and_its_end(
    served: list[Metrics],
) -> None:
    wf = approval_graph()
    metrics = serve(served, wf)
    run = wf.start({})
    run.run()
    paused = scrape(metrics)
    assert value(paused, "agentnb_pending_approvals", graph="refund") == 1
    assert moves(paused, "refund", "START", "plan") == 1
    assert moves(paused, "refund", "plan", "refund") == 1
    assert value(paused, "agentnb_runs_total", graph="refund", status="completed") == 0
    assert value(paused, "agentnb_approval_wait_seconds_count", graph="refund", node="refund") == 0

    run.approve(by="ada")
    decided = scrape(metrics)
    assert value(decided, "agentnb_pending_approvals", graph="refund") == 0
    assert value(decided, "agentnb_approval_wait_seconds_count", graph="refund", node="refund") == 1
    run.run()
    done = scrape(metrics)
    assert moves(done, "refund", "refund", END) == 1
    assert value(done, "agentnb_runs_total", graph="refund", status="completed") == 1
    for status in ("rejected", "failed", "cancelled"):
        assert value(done, "agentnb_runs_total", graph="refund", status=status) == 0


def test_node_duration_is_node_start_to_state_update_of_the_event_log(
    served: list[Metrics],
) -> None:
    wf = approval_graph()
    wf_runs = [wf.start({}) for _ in range(3)]
    metrics = serve(served, wf)
    for run in wf_runs:
        run.run()
        run.approve(by="ada")
        run.run()
    samples = scrape(metrics)
    for node in ("plan", "refund"):
        took = []
        for run in wf_runs:
            events = run.events
            start = next(e.at for e in events if e.type == "node_start" and e.node == node)
            end = next(e.at for e in events if e.type == "state_update" and e.node == node)
            took.append(end - start)
        labels = {"graph": "refund", "node": node}
        assert value(samples, "agentnb_node_duration_seconds_count", **labels) == 3
        assert value(samples, "agentnb_node_duration_seconds_sum", **labels) == pytest.approx(
            sum(took), abs=1e-9
        )
        fast = sum(t <= 0.005 for t in took)
        assert value(samples, "agentnb_node_duration_seconds_bucket", le="0.005", **labels) == fast
        assert value(samples, "agentnb_node_duration_seconds_bucket", le="+Inf", **labels) == 3
    # runs started before instrumenting were still seen from node_start on, not at START
    started = {"graph": "refund", "from": "START", "to": "plan"}
    assert value(samples, "agentnb_state_changes_total", **started) == 0


def test_rejected_run_ends_rejected_and_is_no_longer_pending(served: list[Metrics]) -> None:
    wf = approval_graph()
    metrics = serve(served, wf)
    run = wf.start({})
    run.run()
    run.reject(by="grace", comment="too much")
    samples = scrape(metrics)
    assert value(samples, "agentnb_runs_total", graph="refund", status="rejected") == 1
    assert value(samples, "agentnb_pending_approvals", graph="refund") == 0
    assert value(samples, "agentnb_approval_wait_seconds_count", graph="refund", node="refund") == 1


def test_a_pause_decided_in_another_process_stops_counting_when_the_run_moves_on(
    served: list[Metrics],
) -> None:
    wf = approval_graph()
    metrics = serve(served, wf)
    run = wf.start({})
    run.run()
    # Another kernel decides: same store, a workflow this Metrics does not listen to.
    other = approval_graph()
    other.checkpointer = wf.checkpointer
    other.attach(run.run_id).approve(by="ada")
    assert value(scrape(metrics), "agentnb_pending_approvals", graph="refund") == 1
    wf.attach(run.run_id).run()
    samples = scrape(metrics)
    assert value(samples, "agentnb_pending_approvals", graph="refund") == 0
    assert value(samples, "agentnb_runs_total", graph="refund", status="completed") == 1


def test_retries_and_timeouts_are_counted_per_node(served: list[Metrics]) -> None:
    failures = iter([ConnectionError("down"), ConnectionError("still down")])

    def flaky(state: dict[str, Any]) -> dict[str, Any]:
        error = next(failures, None)
        if error is not None:
            raise error
        return {"paid": True}

    async def stuck(state: dict[str, Any]) -> None:
        await asyncio.Event().wait()  # never set: only the timeout ends it

    g = StateGraph("pay")
    g.add_node("flaky", flaky, retry=Retry(attempts=3, initial=0.001, jitter=0))
    g.add_node("stuck", stuck, timeout=0.01, retry=Retry(attempts=2, initial=0.001, jitter=0))
    g.set_entry_point("flaky")
    g.add_edge("flaky", "stuck")
    wf = g.compile(MemoryCheckpointer())
    metrics = serve(served, wf)
    with pytest.raises(NodeFailed):
        wf.start({}).run()
    samples = scrape(metrics)
    assert value(samples, "agentnb_retries_total", graph="pay", node="flaky") == 2
    assert value(samples, "agentnb_retries_total", graph="pay", node="stuck") == 1
    assert value(samples, "agentnb_timeouts_total", graph="pay", node="stuck") == 2
    assert value(samples, "agentnb_runs_total", graph="pay", status="failed") == 1
    # the failed execution is timed too, from node_start to failed
    assert value(samples, "agentnb_node_duration_seconds_count", graph="pay", node="stuck") == 1
    assert value(samples, "agentnb_node_duration_seconds_sum", graph="pay", node="stuck") >= 0.02


def test_breaker_state_follows_the_breaker_through_open_half_open_and_closed(
    served: list[Metrics],
) -> None:
    now = [1000.0]
    breaker = CircuitBreaker("payments", failures=2, reset_after=30, clock=lambda: now[0])
    healthy = [False]

    def pay(state: dict[str, Any]) -> dict[str, Any]:
        if not healthy[0]:
            raise ConnectionError("payments down")
        return {"paid": True}

    g = StateGraph("pay")
    g.add_node("pay", pay, breaker=breaker)
    g.set_entry_point("pay")
    wf = g.compile(MemoryCheckpointer())
    metrics = serve(served, wf)
    labels = {"breaker": "payments"}
    refused = {"graph": "pay", "node": "pay", "breaker": "payments"}
    assert value(scrape(metrics), "agentnb_breaker_state", **labels) == 0

    for expected_state in (0, 2):  # the second consecutive failure opens it
        with pytest.raises(NodeFailed):
            wf.start({}).run()
        assert value(scrape(metrics), "agentnb_breaker_state", **labels) == expected_state
    with pytest.raises(AgentnbError):  # BreakerOpen: the node is not even called
        wf.start({}).run()
    samples = scrape(metrics)
    assert value(samples, "agentnb_breaker_refused_total", **refused) == 1
    assert value(samples, "agentnb_breaker_open_total", **labels) == 1
    assert value(samples, "agentnb_runs_total", graph="pay", status="failed") == 3

    now[0] += 30
    assert breaker.allow()  # the cool-down is over: one trial call may go
    assert value(scrape(metrics), "agentnb_breaker_state", **labels) == 1
    breaker.failure()  # the trial failed: open again
    samples = scrape(metrics)
    assert value(samples, "agentnb_breaker_state", **labels) == 2
    assert value(samples, "agentnb_breaker_open_total", **labels) == 2

    now[0] += 30
    healthy[0] = True
    wf.start({}).run()
    samples = scrape(metrics)
    assert value(samples, "agentnb_breaker_state", **labels) == 0
    assert value(samples, "agentnb_breaker_open_total", **labels) == 2
    assert value(samples, "agentnb_runs_total", graph="pay", status="completed") == 1


def test_state_machine_transitions_share_the_state_changes_counter(
    served: list[Metrics],
) -> None:
    metrics = serve(served, approval_graph())
    metrics.observe_transition("traffic", "green", "yellow", seconds=2.5)
    metrics.observe_transition("traffic", "green", "yellow")
    metrics.observe_transition("traffic", "yellow", "red", seconds=0.5)
    samples = scrape(metrics)
    moves = {"graph": "traffic", "from": "green", "to": "yellow"}
    assert value(samples, "agentnb_state_changes_total", **moves) == 2
    green = {"graph": "traffic", "state": "green"}
    assert value(samples, "agentnb_state_duration_seconds_count", **green) == 1
    assert value(samples, "agentnb_state_duration_seconds_sum", **green) == 2.5
    assert value(samples, "agentnb_state_duration_seconds_bucket", le="1.0", **green) == 0
    assert value(samples, "agentnb_state_duration_seconds_bucket", le="2.5", **green) == 1
    # a state machine is not a workflow: no run or approval series for it
    assert ("agentnb_pending_approvals", frozenset({("graph", "traffic")})) not in samples


def test_series_known_from_the_graph_start_at_zero(served: list[Metrics]) -> None:
    g = StateGraph("shape")
    g.add_node("a", lambda s: None, retry=3, timeout=5)
    g.add_node("b", lambda s: None)
    g.set_entry_point("a")
    g.add_conditional_edge("a", lambda s: "b", ["b", END])
    wf = g.compile()
    samples = scrape(serve(served, wf))
    for source, target in (("START", "a"), ("a", "b"), ("a", END), ("b", END)):
        moves = {"graph": "shape", "from": source, "to": target}
        assert value(samples, "agentnb_state_changes_total", **moves) == 0
    assert value(samples, "agentnb_retries_total", graph="shape", node="a") == 0
    assert value(samples, "agentnb_timeouts_total", graph="shape", node="a") == 0
    assert ("agentnb_retries_total", frozenset({("graph", "shape"), ("node", "b")})) not in samples
    assert value(samples, "agentnb_node_duration_seconds_count", graph="shape", node="b") == 0


@pytest.mark.slow
def test_counts_stay_exact_past_a_batch_and_across_threads(served: list[Metrics]) -> None:
    g = StateGraph("long")
    for i in range(150):
        g.add_node(f"n{i}", lambda state, i=i: {"i": i})
    g.set_entry_point("n0")
    for i in range(149):
        g.add_edge(f"n{i}", f"n{i + 1}")
    wf = g.compile(MemoryCheckpointer(), max_steps=200)
    metrics = serve(served, wf)

    def drive(runs: int) -> None:
        for _ in range(runs):
            asyncio.run(wf.start({}).arun())

    threads = [threading.Thread(target=drive, args=(5,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    samples = scrape(metrics)
    assert value(samples, "agentnb_runs_total", graph="long", status="completed") == 20
    for i in (0, 77, 148):
        moves = {"graph": "long", "from": f"n{i}", "to": f"n{i + 1}"}
        assert value(samples, "agentnb_state_changes_total", **moves) == 20
    assert value(samples, "agentnb_node_duration_seconds_count", graph="long", node="n149") == 20


def test_listeners_fold_their_queue_in_batches_without_waiting_for_a_scrape() -> None:
    g = StateGraph("long")
    for i in range(150):
        g.add_node(f"n{i}", lambda state, i=i: {"i": i})
    g.set_entry_point("n0")
    for i in range(149):
        g.add_edge(f"n{i}", f"n{i + 1}")
    wf = g.compile(MemoryCheckpointer(), max_steps=200)
    with instrument(wf) as metrics:
        for _ in range(3):
            wf.start({}).run()  # 3 x 302 events, never scraped
        queued = metrics._graphs["long"].inbox
        assert 0 < len(queued) < 256  # a bounded queue: the rest is folded already
        metrics.flush()
        assert queued == []


def test_text_and_table_show_the_same_values_with_every_label_escaped(
    served: list[Metrics],
) -> None:
    hostile = '<script>alert("x")</script> & co'
    g = StateGraph(hostile)
    g.add_node(hostile, lambda s: None)
    g.set_entry_point(hostile)
    wf = g.compile()
    metrics = instrument(wf)
    served.append(metrics)
    wf.invoke({})
    rows = {(r.name, tuple(sorted(r.labels.items()))): r.value for r in metrics.table()}
    assert rows[("agentnb_runs_total", (("graph", hostile), ("status", "completed")))] == 1
    assert not any(name.endswith("_bucket") for name, _ in rows)
    exposed = r'agentnb_runs_total{graph="<script>alert(\"x\")</script> & co",status="completed"}'
    assert f"{exposed} 1.0" in metrics.text()
    page = metrics._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co" in page

    printed: list[str] = []

    class Printer:
        def text(self, text: str) -> None:
            printed.append(text)

    metrics._repr_pretty_(Printer(), False)
    assert "agentnb_runs_total" in printed[0]
    assert "status=completed" in printed[0]


def test_serving_twice_is_refused_and_stop_closes_the_port(served: list[Metrics]) -> None:
    metrics = serve(served, approval_graph())
    host, port = metrics.address or ("", 0)
    with pytest.raises(AgentnbError, match="served already"):
        metrics.serve()
    assert f"{host}:{port}" in repr(metrics)
    metrics.stop()
    assert metrics.address is None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5)
    metrics.stop()  # stopping again does nothing


def test_close_unsubscribes_and_frees_the_registry_for_another_metrics() -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    wf = approval_graph()
    first = instrument(wf, registry=registry)
    with pytest.raises(AgentnbError, match="already has agentnb metrics"):
        instrument(wf, registry=registry)
    first.close()
    assert not wf.listeners
    assert "agentnb_" not in first.text()
    wf.start({}).run()  # nobody counts this one
    with instrument(wf, registry=registry) as second:
        rows = {(r.name, tuple(sorted(r.labels.items()))): r.value for r in second.table()}
        assert rows[("agentnb_pending_approvals", (("graph", "refund"),))] == 0
    assert not wf.listeners


def test_watching_more_workflows_and_the_same_one_twice(served: list[Metrics]) -> None:
    refund, other = approval_graph("refund"), approval_graph("other")
    metrics = serve(served, refund)
    assert metrics.watch(other) is metrics
    metrics.watch(refund)
    assert len(refund.listeners) == 1
    refund.start({}).run()
    other.start({}).run()
    samples = scrape(metrics)
    assert value(samples, "agentnb_pending_approvals", graph="refund") == 1
    assert value(samples, "agentnb_pending_approvals", graph="other") == 1
    assert repr(metrics).startswith("<Metrics: 2 workflows")


def test_missing_prometheus_client_raises_missing_dependency(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in list(sys.modules):
        if name == "prometheus_client" or name.startswith("prometheus_client."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(MissingDependency) as caught:
        instrument(approval_graph())
    assert caught.value.package == "prometheus_client"
    assert caught.value.extra == "metrics"
    assert 'pip install "agentnb[metrics]"' in str(caught.value)


def test_importing_agentnb_metrics_does_not_import_prometheus_client() -> None:
    code = "import sys, agentnb.metrics; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_state_machine_is_instrumented_too() -> None:
    from agentnb.fsm import StateMachine
    from agentnb.metrics import instrument

    light = StateMachine("light", ["red", "green"], initial="red")
    light.add_transition("red", "go", "green")
    light.add_transition("green", "stop", "red")
    with instrument(light) as metrics:
        first = light.start(strict=False)
        for event in ("go", "stop", "go", "honk"):
            first.send(event, event_id=event + "-1")
        first.send("go", event_id="go-1")  # a duplicate delivery counts once
        counts = {
            (row.labels["from"], row.labels["to"]): row.value
            for row in metrics.table()
            if row.name == "agentnb_state_changes_total" and row.value
        }
    assert counts == {("red", "green"): 1.0, ("green", "red"): 1.0}
