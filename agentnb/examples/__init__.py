"""Small workflows used by the demo, the notebooks, the README and the tests.

The course tells one story — a refund — in every notebook: :func:`build_refund_graph` (the
workflow), :func:`build_refund_machine` (the same story as a state machine) and
:class:`ScriptedModel` (an offline model for the agent loop that pays refunds by tool call).
"""

from agentnb.examples.agent import ScriptedModel, tool_call
from agentnb.examples.refund import (
    APPROVAL_THRESHOLD,
    PaymentService,
    build_refund_graph,
    build_refund_workflow,
)
from agentnb.examples.refund_machine import build_refund_machine

__all__ = [
    "APPROVAL_THRESHOLD",
    "PaymentService",
    "ScriptedModel",
    "build_refund_graph",
    "build_refund_machine",
    "build_refund_workflow",
    "tool_call",
]
