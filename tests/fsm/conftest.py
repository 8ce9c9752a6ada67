"""Shared fixtures for the state machines: events sent through ``send`` and ``asend``."""

from __future__ import annotations

import pytest
from fsm_support import Sender


@pytest.fixture(params=["sync", "async"])
def send(request: pytest.FixtureRequest) -> Sender:
    """Every instance behaviour is checked through ``send`` and through ``asend``."""
    return Sender(request.param)
