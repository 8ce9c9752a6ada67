"""``MODULE:ATTR`` targets: one loader for the worker, ``approve --workflow`` and ``draw``."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

from agentnb import DefinitionError, MemoryCheckpointer, Workflow
from agentnb.graph.targets import bind_workflow, import_target

FLOWS = """
from agentnb import MemoryCheckpointer, StateGraph
graph = StateGraph("flow").add_node("a", lambda s: None).set_entry_point("a")
workflow = graph.compile(MemoryCheckpointer(), max_steps=9, recursion_limit=7)
NOT_A_GRAPH = 3
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"flows_{uuid.uuid4().hex}"  # a fresh module each time: sys.modules caches them
    (tmp_path / f"{name}.py").write_text(FLOWS)
    monkeypatch.chdir(tmp_path)
    return name


def test_a_compiled_workflow_bound_to_a_store_keeps_every_setting(module: str) -> None:
    store = MemoryCheckpointer()
    bound = bind_workflow(f"{module}:workflow", store)
    assert isinstance(bound, Workflow)
    assert bound.checkpointer is store
    assert (bound.max_steps, bound.recursion_limit) == (9, 7)


def test_the_loader_imports_from_the_current_directory_and_leaves_sys_path_alone(
    module: str,
) -> None:
    before = list(sys.path)
    assert import_target(f"{module}:NOT_A_GRAPH") == 3
    assert sys.path == before


def test_a_missing_attribute_names_what_the_module_has(module: str) -> None:
    with pytest.raises(
        DefinitionError, match=r"has no attribute 'nope' \(it has: graph, workflow\)"
    ):
        bind_workflow(f"{module}:nope", MemoryCheckpointer())
