"""One definitions package: machines, statecharts and workflow graphs share its parts."""

from __future__ import annotations

import ast
from pathlib import Path

import agentnb.definitions
from agentnb.definitions.findings import Finding, problem, sound, under
from agentnb.definitions.names import is_valid_name, suggest
from agentnb.definitions.registry import registered

PACKAGE = Path(agentnb.definitions.__file__).parent


def test_machines_and_graphs_report_the_same_finding_type() -> None:
    import agentnb.fsm.rules
    import agentnb.graph.rules

    assert agentnb.fsm.rules.Finding is Finding
    assert agentnb.graph.rules.Finding is Finding


def test_every_loader_names_the_same_registry_type() -> None:
    import agentnb.fsm.chart_file
    import agentnb.fsm.loader
    import agentnb.graph.loader
    import agentnb.graph.registry
    from agentnb.definitions.registry import Registry

    for module in (
        agentnb.fsm.loader,
        agentnb.fsm.chart_file,
        agentnb.graph.loader,
        agentnb.graph.registry,
    ):
        assert module.Registry is Registry, module.__name__


def test_the_old_document_module_is_the_new_one() -> None:
    import agentnb.definitions.document
    import agentnb.fsm.document

    assert agentnb.fsm.document.parse_document is agentnb.definitions.document.parse_document
    assert agentnb.fsm.document.MAX_BYTES == agentnb.definitions.document.MAX_BYTES


def test_suggest_offers_the_closest_name_then_the_known_ones() -> None:
    assert (
        suggest("refnd", {"refund", "ship"})
        == "Did you mean 'refund'? Known nodes: 'refund', 'ship'"
    )
    assert suggest("x", [], "names") == "Known names: none"
    small = suggest("rde", ["red"], "states", sentence=False, none="")
    assert small == "did you mean 'red'? Known states: 'red'"


def test_suggest_lists_at_most_twenty_names() -> None:
    fix = suggest("zz", [f"n{i:03}" for i in range(150)], "names")
    assert fix.endswith("'n019', ...")
    assert "Did you mean" not in fix  # over 100 names: no fuzzy search


def test_a_name_is_valid_only_within_the_pattern_and_length() -> None:
    assert is_valid_name("a.b-c_1")
    assert not is_valid_name("1a")
    assert not is_valid_name("a\n")
    assert not is_valid_name("a" * 65)
    assert not is_valid_name(3)


def test_a_finding_becomes_a_schema_problem_at_its_json_path() -> None:
    found = problem(Finding(("edges", 2, "target"), "no such node", "Add it", "x"))
    assert (found.path, found.message, found.fix) == ("$.edges[2].target", "no such node", "Add it")


def test_a_path_is_under_itself_and_its_children_only() -> None:
    assert under("$.states", "$.states")
    assert under("$.states[0].name", "$.states")
    assert under("$.states.x", "$.states")
    assert not under("$.states_extra", "$.states")
    assert sound(["$.nodes[1]"], "nodes", 0)
    assert not sound(["$.nodes[1].name"], "nodes", 1)


def test_a_registry_is_listed_by_name_or_as_none() -> None:
    assert registered({"b": len, "a": len}) == "'a', 'b'"
    assert registered({}) == "none"


def test_definitions_know_nothing_of_machines_graphs_or_stores() -> None:
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("agentnb"):
                    assert name.startswith(
                        ("agentnb.definitions", "agentnb.errors", "agentnb._json")
                    ), (path.name, name)
