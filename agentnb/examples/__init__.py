"""Small workflows used by the demo, the notebooks, the README and the tests."""

from agentnb.examples.refund import PaymentService, build_refund_graph, build_refund_workflow

__all__ = ["PaymentService", "build_refund_graph", "build_refund_workflow"]
