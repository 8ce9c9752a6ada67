"""The examples in the state-machine docstrings run and say what they show."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

from agentnb.fsm import instance, loader, machine


@pytest.mark.parametrize("module", [machine, instance, loader], ids=lambda m: m.__name__)
def test_docstring_examples_run(module: ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
