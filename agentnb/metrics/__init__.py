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

from agentnb.metrics._collector import BREAKER_STATES as BREAKER_STATES
from agentnb.metrics._collector import MetricRow, Metrics, instrument
from agentnb.metrics._series import DURATION_BUCKETS, WAIT_BUCKETS
from agentnb.metrics._series import RUN_ENDS as RUN_ENDS

__all__ = ["DURATION_BUCKETS", "WAIT_BUCKETS", "MetricRow", "Metrics", "instrument"]

# The public names say they live here, where they are documented, not in a private module.
for _public in (MetricRow, Metrics, instrument):
    _public.__module__ = __name__
del _public
