"""The examples in the graph package's docstrings run and show what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import agentnb.graph

MODULES = sorted(m.name for m in pkgutil.iter_modules(agentnb.graph.__path__, "agentnb.graph."))


@pytest.mark.parametrize("name", MODULES)
def test_the_docstring_examples_of_each_graph_module_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, name


def test_the_langgraph_spellings_have_examples_that_run() -> None:
    examples = {
        m: doctest.testmod(importlib.import_module(m)).attempted
        for m in ("agentnb.graph.routes", "agentnb.graph.state", "agentnb.graph.builder")
    }
    assert all(examples.values()), examples
