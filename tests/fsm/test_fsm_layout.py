"""The state-machine package's public names and import direction stay as designed."""

from __future__ import annotations

import ast
from pathlib import Path

import agentnb.fsm

PACKAGE = Path(agentnb.fsm.__file__).parent
ALLOWED_OUTSIDE = {
    "agentnb.errors",
    "agentnb._aio",
    "agentnb._json",
    "agentnb._display",
    "agentnb._listeners",
    "agentnb.resilience",
    "agentnb.definitions.document",
    "agentnb.definitions.findings",
    "agentnb.definitions.names",
    "agentnb.definitions.registry",
    "agentnb.definitions.schema",
}
# Typing only: a workflow checkpointer is also accepted as an instance store.
TYPE_ONLY = {"agentnb.store.base"}
# Definitions sit below instances: these modules never import the running side.
DEFINITIONS = {
    "rules",
    "machine",
    "records",
    "memory",
    "document",
    "loader",
    "storage",
    "expressions",
    "content",
    "chart",
    "scxml",
    "timers",
    "nodes",
    "scxml_writer",
    "trace",
    "chart_file",
    "scxml_xml",
    "flat",
}
RUNNING = {
    "agentnb.fsm.instance",
    "agentnb.fsm.reload",
    "agentnb.fsm.interpreter",
    "agentnb.fsm.entry_exit",
    "agentnb.fsm.invocations",
    "agentnb.fsm.selection",
    "agentnb.fsm.session_state",
}


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("agentnb")}


def test_the_public_names_are_pinned() -> None:
    assert agentnb.fsm.__all__ == [
        "Assign",
        "Cancel",
        "ChartInstance",
        "Final",
        "Foreach",
        "History",
        "If",
        "InstanceSnapshot",
        "Log",
        "MachineInstance",
        "MachineReloader",
        "MachineStore",
        "ManualClock",
        "MemoryMachineStore",
        "Microstep",
        "Parallel",
        "Raise",
        "ReloadResult",
        "Send",
        "State",
        "StateMachine",
        "Statechart",
        "TimerRecord",
        "Transition",
        "TransitionRecord",
        "load_machine",
        "load_scxml",
        "load_statechart",
        "load_xstate",
        "validate_file",
    ]


def test_fsm_imports_only_the_base_layer_outside_itself() -> None:
    for path in PACKAGE.glob("*.py"):
        outside = {
            name
            for name in _imports(path, top_level_only=False)
            if not name.startswith("agentnb.fsm")
        }
        allowed = ALLOWED_OUTSIDE | TYPE_ONLY
        assert outside <= allowed, (path.name, outside - allowed)
        for name in outside & TYPE_ONLY:
            assert name not in _imports(path, top_level_only=True), path.name  # TYPE_CHECKING


def test_definition_modules_do_not_import_instances_at_import_time() -> None:
    for name in DEFINITIONS:
        imported = _imports(PACKAGE / f"{name}.py", top_level_only=True)
        assert not imported & RUNNING, (name, imported & RUNNING)
