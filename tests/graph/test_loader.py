"""Loading workflow graphs from JSON/YAML: valid files, a corpus of broken ones, and fuzzing."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentnb.errors import DefinitionError, NodeFailed, SchemaError
from agentnb.examples.refund import build_refund_graph
from agentnb.graph.builder import StateGraph
from agentnb.graph.loader import (
    LoadedGraph,
    definition_file_kind,
    definition_kind,
    load_workflow,
    outline_workflow,
    parse_workflow,
    validate_workflow_file,
    workflow_problems,
    workflow_schema,
)
from agentnb.graph.registry import Unregistered
from agentnb.graph.workflow import Workflow
from tests.document_fuzz import json_values as json_values_of
from tests.document_fuzz import mutated

HERE = Path(__file__).parent
DATA = HERE / "data"
INVALID = HERE / "invalid_workflows"
MACHINE = HERE.parent / "fsm" / "data" / "traffic_light.json"


def refund_registry(payments: list[Any] | None = None) -> dict[str, Any]:
    """The refund example's own functions, under the names the data files use."""
    graph = build_refund_graph(payments)
    return {
        "plan": graph.nodes["planner"].fn,
        "human_approval": graph.nodes["human_approval"].fn,
        "pay": graph.nodes["refund"].fn,
        "route": graph.branches["planner"].router,
    }


def three_args(state: Any, ctx: Any, extra: Any) -> None:
    return None


class Declined(Exception):
    pass


REGISTRY = {
    **refund_registry(),
    "THRESHOLD": 500,
    "three_args": three_args,
    "Declined": Declined,
}

NOT_A_NODE = "which is not a node"

# file -> [(JSON path, fragment of "path: message (fix)")], every problem the file must report.
EXPECTED: dict[str, list[tuple[str, str]]] = {
    # reading
    "malformed.json": [("$", "invalid JSON at line 4, column 3: Expecting ',' delimiter")],
    "malformed.yaml": [("$", "invalid YAML at line 5, column 2")],
    "empty.json": [("$", "the document is empty")],
    "utf16.json": [("$", "UTF-16 encoded (Save it as UTF-8)")],
    "top_level_list.json": [("$", "must be an object, not a list")],
    "duplicate_key.json": [("$.entry", "duplicate key 'entry'")],
    "yaml_alias.yaml": [("$", "aliases and anchors are not supported")],
    "bom_valid.json": [],
    # schema
    "missing_kind.json": [("$.kind", "required key 'kind' is missing (Add 'kind': \"workflow\"")],
    "wrong_kind.json": [("$.kind", 'must be "workflow", not the string "state_machine"')],
    "missing_entry.yaml": [("$.entry", "required key 'entry' is missing")],
    "missing_nodes.json": [("$.nodes", "required key 'nodes' is missing")],
    "unknown_top_key.json": [("$.interupt_before", "Did you mean 'interrupt_before'?")],
    "node_unknown_key.yaml": [("$.nodes[0].timout", "Did you mean 'timeout'?")],
    "bad_node_name.json": [("$.nodes[1]", '"human approval" is not a valid name')],
    "node_wrong_type.json": [("$.nodes[1]", "must be a string or an object, not the number 7")],
    "timeout_not_positive.json": [("$.nodes[2].timeout", "less than or equal to the minimum of 0")],
    "retry_wrong_type.yaml": [
        ("$.nodes[0].retry", 'must be an integer or an object, not the string "three"')
    ],
    "retry_bad_attempts.json": [
        ("$.nodes[2].retry.attempts", "0 is less than the minimum of 1"),
        ("$.nodes[2].retry.multiplier", "0.5 is less than the minimum of 1"),
    ],
    "edge_missing_target.json": [("$.edges[1].target", "required key 'target' is missing")],
    "targets_wrong_type.json": [
        ("$.conditional_edges[0].targets", 'must be a list or an object, not the string "refund"')
    ],
    "empty_targets.json": [("$.conditional_edges[0].targets", "must have at least 1 item")],
    "max_steps_zero.json": [("$.max_steps", "0 is less than the minimum of 1")],
    "yaml_boolean_name.yaml": [
        ("$.edges[0].target", "must be a string, not false"),
        ("$.nodes[0].name", "quote words like on, off, yes and no"),
    ],
    # rules the schema cannot express
    "unknown_entry.json": [("$.entry", "the entry names 'plan', which is not a node")],
    "edge_unknown_target.json": [("$.edges[0].target", "Did you mean 'refund'?")],
    "edge_unknown_source.yaml": [("$.edges[0].source", "names 'planer', which is not a node")],
    "conditional_unknown_target.json": [
        ("$.conditional_edges[0].targets.small", f"names 'payout', {NOT_A_NODE}")
    ],
    "conditional_list_unknown_target.yaml": [
        ("$.conditional_edges[0].targets[1]", "Did you mean 'refund'?")
    ],
    "interrupt_unknown.json": [("$.interrupt_before[0]", f"names 'approval', {NOT_A_NODE}")],
    "duplicate_edge.json": [
        ("$.edges[2]", "the edge 'refund' -> 'END' is declared twice (at $.edges[1])")
    ],
    "two_conditional_edges.json": [
        ("$.conditional_edges[1].source", "already has a conditional edge (at $.conditional_")
    ],
    "duplicate_node.yaml": [("$.nodes[2].name", "node 'planner' is already defined")],
    "reserved_node_name.json": [("$.nodes[3]", "'END' is reserved and cannot name a node")],
    "unreachable_node.json": [
        ("$.nodes[3]", "node 'audit' cannot be reached from the entry point 'planner'"),
        ("$.nodes[4]", "node 'notify' cannot be reached"),
    ],
    "edge_from_start.json": [("$.edges[0].source", "leaves START (Write \"entry\": 'planner')")],
    "unknown_breaker.json": [("$.nodes[2].breaker", "Did you mean 'payments'?")],
    # names resolved in the registry, and the builder's own checks
    "unknown_function.json": [("$.nodes[0].fn", "unknown function 'plann': it is not in the")],
    "unknown_router.yaml": [("$.conditional_edges[0].router", "unknown router 'choose'")],
    "unknown_reducer.yaml": [("$.reducers.total", "unknown reducer 'sum_up'")],
    "unknown_exception.json": [
        (
            "$.nodes[2].retry.exceptions[1]",
            "'PaymentDeclined': it is not in the registry nor a built-in",
        )
    ],
    "not_callable.json": [("$.nodes[2].fn", "'THRESHOLD' used as function is a int")],
    "not_an_exception.json": [("$.nodes[2].retry.exceptions[0]", "not an exception class")],
    "bad_signature.json": [("$.nodes[2].fn", "'three_args' takes 3 required arguments")],
    "many_problems.json": [
        ("$.interrupt_after", 'must be a list, not the string "refund"'),
        ("$.name", '"refund flow" is not a valid name'),
        ("$.nodes[2].timout", "unknown key 'timout'"),
        ("$.edges[0].target", "names 'refnd', which is not a node"),
        ("$.nodes[0].fn", "unknown function 'plann'"),
    ],
}


def test_the_corpus_and_its_expectations_match_one_to_one() -> None:
    assert {p.name for p in INVALID.iterdir()} == set(EXPECTED)
    assert len(EXPECTED) >= 20


@pytest.mark.parametrize("name", sorted(n for n, problems in EXPECTED.items() if problems))
def test_each_broken_file_reports_exactly_its_problems(name: str) -> None:
    with pytest.raises(SchemaError) as caught:
        load_workflow(INVALID / name, registry=REGISTRY)
    problems = caught.value.problems
    assert [p.path for p in problems] == [path for path, _ in EXPECTED[name]]
    for problem, (_, fragment) in zip(problems, EXPECTED[name], strict=True):
        assert fragment in str(problem)
        assert problem.fix, f"{problem} has no fix"
    assert caught.value.source == str(INVALID / name)
    assert validate_workflow_file(INVALID / name, registry=REGISTRY) == problems


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    assert (INVALID / "bom_valid.json").read_bytes().startswith(codecs.BOM_UTF8)
    graph = load_workflow(INVALID / "bom_valid.json", registry=REGISTRY)
    assert graph.compile().shape == build_refund_graph().compile().shape


def test_the_error_message_lists_every_problem_with_its_path() -> None:
    with pytest.raises(SchemaError) as caught:
        load_workflow(INVALID / "many_problems.json", registry=REGISTRY)
    message = str(caught.value)
    assert message.startswith(f"5 problems in {INVALID / 'many_problems.json'}:")
    assert "\n  - $.edges[0].target: the edge 'human_approval' -> 'refnd'" in message


def test_the_shipped_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(workflow_schema())


# -- valid files -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["refund.json", "refund.yaml"])
def test_a_valid_file_has_the_shape_of_the_graph_built_in_python(name: str) -> None:
    loaded = load_workflow(DATA / name, registry=REGISTRY)
    built = build_refund_graph()
    assert isinstance(loaded, LoadedGraph)
    assert loaded.compile().shape == built.compile().shape
    assert {n: s.description for n, s in loaded.nodes.items()} == {
        n: s.description for n, s in built.nodes.items()
    }
    assert loaded.nodes["refund"].takes_ctx
    assert loaded.description.startswith("Plan a refund")
    assert loaded.source == str(DATA / name)
    assert len(loaded.digest) == 64


def _run(workflow: Workflow, requested: int) -> list[tuple[Any, ...]]:
    """Every event of a run (approved when it pauses), without its timestamps."""
    run_id = f"run-{requested}"
    events = list(workflow.stream({"requested": requested}, run_id=run_id))
    if events[-1].type == "interrupted":
        events += workflow.resume(run_id, "approved", by="ada")
    return [(e.seq, e.step, e.type, e.node, e.payload) for e in events]


@pytest.mark.parametrize("requested", [100, 900])
def test_a_loaded_graph_runs_exactly_as_the_graph_built_in_python(requested: int) -> None:
    paid_by_file: list[Any] = []
    paid_by_code: list[Any] = []
    loaded = load_workflow(DATA / "refund.json", registry=refund_registry(paid_by_file))
    by_file = _run(loaded.compile(), requested)
    by_code = _run(build_refund_graph(paid_by_code).compile(), requested)
    assert by_file == by_code
    assert paid_by_file == paid_by_code == [requested]
    assert ("interrupted" in {e[2] for e in by_file}) is (requested > 500)


def test_json_and_yaml_forms_define_the_same_graph() -> None:
    from_json = load_workflow(DATA / "refund.json", registry=REGISTRY).compile()
    from_yaml = load_workflow(DATA / "refund.yaml", registry=REGISTRY).compile()
    assert from_json.shape == from_yaml.shape
    assert from_json.max_steps == from_yaml.max_steps == 25


class Flaky(Exception):
    pass


def support_registry(log: list[str]) -> dict[str, Any]:
    failures = [Flaky("helpdesk hiccup")]

    def answer(state: dict[str, Any]) -> dict[str, Any]:
        log.append("answer")
        if failures:
            raise failures.pop()
        return {"answer": "restart it", "attempts": 1}

    return {
        "triage": lambda state: {"attempts": 1},
        "answer": answer,
        "escalate": lambda state: None,
        "review": lambda state: None,
        "pick": lambda state: "answer",
        "done": lambda state: "ok",
        "add": lambda current, new: (current or 0) + new,
        "Flaky": Flaky,
    }


def test_every_option_of_the_file_form_reaches_the_builder() -> None:
    log: list[str] = []
    graph = load_workflow(DATA / "support.yaml", registry=support_registry(log))
    answer = graph.nodes["answer"]
    assert answer.timeout == 2.5
    assert answer.retry is not None
    assert (answer.retry.attempts, answer.retry.initial, answer.retry.on) == (
        2,
        0.0,
        (TimeoutError, Flaky),
    )
    assert answer.breaker is not None
    assert (answer.breaker.name, answer.breaker.failures, answer.breaker.reset_after) == (
        "helpdesk",
        2,
        5.0,
    )
    assert graph.nodes["escalate"].retry is not None
    assert graph.nodes["escalate"].retry.attempts == 3
    assert graph.branches["triage"].targets == {"answer": "answer", "escalate": "escalate"}
    assert graph.interrupts_after == {"escalate"}
    workflow = graph.compile()
    assert workflow.max_steps == 12
    assert graph.compile(max_steps=3).max_steps == 3
    run = workflow.invoke()
    assert run.status == "completed"
    assert log == ["answer", "answer"]  # the Flaky failure was retried
    assert run.state == {"attempts": 2, "answer": "restart it"}


def test_a_one_line_json_string_is_a_document_and_bytes_work_too() -> None:
    doc = '{"kind": "workflow", "name": "hi", "entry": "greet", "nodes": ["greet"]}'
    registry = {"greet": lambda state: {"greeting": "hi"}}
    for source in (doc, doc.encode()):
        run = load_workflow(source, registry=registry).compile().invoke()
        assert run.state == {"greeting": "hi"}
    graph = parse_workflow(doc, source="inline", format="json", registry=registry)
    assert graph.source == "inline"


def test_names_in_the_file_are_never_imported() -> None:
    assert "antigravity" not in sys.modules
    doc = json.dumps(
        {
            "kind": "workflow",
            "name": "w",
            "entry": "fly",
            "nodes": [
                {"name": "fly", "fn": "antigravity.fly", "retry": {"exceptions": ["antigravity"]}}
            ],
        }
    )
    with pytest.raises(SchemaError) as caught:
        load_workflow(doc, registry={})
    assert [p.path for p in caught.value.problems] == [
        "$.nodes[0].fn",
        "$.nodes[0].retry.exceptions[0]",
    ]
    assert "names are never imported" in str(caught.value)
    assert "antigravity" not in sys.modules


# -- without a registry: validation and drawing ------------------------------------------


def test_validate_without_a_registry_checks_names_for_form_only() -> None:
    assert validate_workflow_file(DATA / "refund.yaml") == []
    assert validate_workflow_file(INVALID / "unknown_function.json") == []
    assert validate_workflow_file(INVALID / "bad_signature.json") == []
    assert validate_workflow_file(INVALID / "unknown_function.json", registry={}) != []
    assert validate_workflow_file(HERE / "no_such_file.json")[0].message.startswith(
        "cannot read the file"
    )


def test_workflow_problems_checks_parsed_data() -> None:
    data = json.loads((DATA / "refund.json").read_text())
    assert workflow_problems(data, registry=REGISTRY) == []
    data["entry"] = "nowhere"
    assert [p.path for p in workflow_problems(data, registry=None)] == ["$.entry"]


def test_an_outline_draws_the_structure_with_placeholders_that_refuse_to_run() -> None:
    outline = outline_workflow(DATA / "support.yaml")
    loaded = load_workflow(DATA / "support.yaml", registry=support_registry([]))
    assert outline.compile().shape == loaded.compile().shape
    retry = outline.nodes["answer"].retry
    assert retry is not None
    assert retry.on[0] is TimeoutError
    assert retry.on[1] is Unregistered  # "Flaky": the file's own, not built in
    with pytest.raises(NodeFailed) as caught:
        outline.compile().invoke()
    assert isinstance(caught.value.__cause__, DefinitionError)
    assert "loaded for drawing only" in str(caught.value)


def test_an_outline_can_be_drawn(tmp_path: Path) -> None:
    dot = outline_workflow(DATA / "support.yaml").draw(tmp_path / "support.dot").read_text()
    for name in ("triage", "answer", "escalate", "review"):
        assert f'id="node-{name}"' in dot


def test_an_outline_of_a_broken_file_is_refused_like_a_load() -> None:
    with pytest.raises(SchemaError, match="cannot be reached"):
        outline_workflow(INVALID / "unreachable_node.json")


def test_the_kind_key_tells_workflows_from_state_machines() -> None:
    assert definition_kind({"kind": "workflow"}) == "workflow"
    assert definition_kind({"kind": "state_machine", "states": []}) == "state_machine"
    assert definition_kind({"name": "m", "states": ["a"]}) == "state_machine"
    assert definition_kind({"name": "w", "nodes": ["a"]}) == "workflow"  # kind forgotten
    assert definition_kind(["not", "a", "definition"]) == "state_machine"
    assert definition_file_kind(DATA / "refund.yaml") == "workflow"
    assert definition_file_kind(INVALID / "missing_kind.json") == "workflow"
    assert definition_file_kind(MACHINE) == "state_machine"
    assert definition_file_kind(INVALID / "malformed.json") == "state_machine"


def test_a_loaded_graph_is_a_state_graph_that_can_be_extended_in_code() -> None:
    graph = load_workflow(DATA / "refund.json", registry=REGISTRY)
    assert isinstance(graph, StateGraph)
    graph.add_node("audit", lambda state: None)
    with pytest.raises(DefinitionError, match="'audit' cannot be reached"):
        graph.compile()  # the builder's own rules still apply
    graph.add_interrupt_after("refund")
    assert graph.interrupts_after == {"refund"}


@pytest.mark.slow
def test_importing_the_loader_needs_no_optional_dependency() -> None:
    code = (
        "import sys, agentnb.graph.loader\n"
        "loaded = {'yaml', 'jsonschema'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- fuzzing -----------------------------------------------------------------------------

WORDS = [
    "kind", "workflow", "name", "entry", "nodes", "edges", "conditional_edges", "source",
    "target", "targets", "router", "fn", "retry", "timeout", "breaker", "breakers", "on",
    "attempts", "interrupt_before", "interrupt_after", "reducers", "max_steps", "description",
    "planner", "refund", "human_approval", "plan", "pay", "route", "START", "END",
    "THRESHOLD", "three_args", "TimeoutError", "a b", "",
]  # fmt: skip

json_values = json_values_of(WORDS)


def _load_or_refuse(source: str | bytes, fmt: Any) -> None:
    try:
        graph = load_workflow(source, registry=REGISTRY, format=fmt)
    except SchemaError as error:
        problems = error.problems
    else:
        graph.compile()  # loaded means whole: the graph passes every rule
        return
    assert problems
    assert all(p.path.startswith("$") and p.message for p in problems)


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(value=json_values, as_yaml=st.booleans())
def test_fuzz_generated_documents_only_ever_give_schema_errors(value: Any, as_yaml: bool) -> None:
    text = yaml.safe_dump(value) if as_yaml else json.dumps(value)
    _load_or_refuse(text.encode(), "yaml" if as_yaml else "json")


@FUZZ
@given(raw=st.binary(max_size=300), fmt=st.sampled_from(["json", "yaml", None]))
def test_fuzz_arbitrary_bytes_only_ever_give_schema_errors(raw: bytes, fmt: Any) -> None:
    _load_or_refuse(raw, fmt)


def mutated_refund() -> st.SearchStrategy[Any]:
    return mutated(DATA / "refund.json", WORDS)


@pytest.mark.slow
@FUZZ
@given(doc=mutated_refund(), as_yaml=st.booleans())
def test_fuzz_mutated_valid_files_only_ever_give_schema_errors(doc: Any, as_yaml: bool) -> None:
    text = yaml.safe_dump(doc) if as_yaml else json.dumps(doc)
    _load_or_refuse(text, "yaml" if as_yaml else "json")


def test_a_file_fans_out_and_joins_like_code_does() -> None:
    document = {
        "kind": "workflow",
        "name": "research",
        "entry": "plan",
        "nodes": ["plan", "web", "papers", "write"],
        "edges": [
            {"source": "plan", "target": "web"},
            {"source": "plan", "target": "papers"},
            {"source": ["web", "papers"], "target": "write"},
        ],
        "reducers": {"notes": "concat"},
    }
    registry = {
        "plan": lambda s: {"notes": []},
        "web": lambda s: {"notes": ["web"]},
        "papers": lambda s: {"notes": ["papers"]},
        "write": lambda s: {"draft": " + ".join(s["notes"])},
        "concat": lambda a, b: [*(a or []), *b],
    }
    run = load_workflow(json.dumps(document), registry=registry).compile().invoke({})
    assert run.state["draft"] == "papers + web"  # merged by node name, as code merges


def test_a_join_naming_an_unknown_node_is_a_problem_at_its_path() -> None:
    document = {
        "kind": "workflow",
        "name": "research",
        "entry": "plan",
        "nodes": ["plan", "web", "write"],
        "edges": [
            {"source": "plan", "target": "web"},
            {"source": ["web", "papres"], "target": "write"},
        ],
    }
    registry = {name: (lambda s: None) for name in ("plan", "web", "write")}
    with pytest.raises(SchemaError) as caught:
        load_workflow(json.dumps(document), registry=registry)
    paths = [p.path for p in caught.value.problems]
    assert paths == ["$.edges[1].source[1]"]


POLICY_DOC = """
kind: workflow
name: guarded
entry: plan
nodes: [plan, pay]
edges: [{source: plan, target: pay}]
interrupt_after: [plan]
interrupt_before:
  - {node: pay, approvers: [bob, "group:finance"], separate_duties: true}
"""


def test_a_file_declares_approvers_and_separate_duties_as_data() -> None:
    from agentnb import Identity, NotAuthorized

    registry = {"plan": lambda s: {"amount": 5}, "pay": lambda s: {"paid": True}}
    graph = load_workflow(POLICY_DOC, registry=registry, format="yaml")
    me = {"now": Identity("bob")}
    wf = graph.compile(identity=lambda: me["now"])
    assert wf.policies["before:pay"].describe() == "approvers bob, group:finance; separate duties"
    assert "after:plan" not in wf.policies  # a bare name: anyone may decide
    run = wf.start({})
    run.step()  # paused after plan, which is also before pay: pay's policy applies
    with pytest.raises(NotAuthorized, match="separate duties: bob started the run"):
        run.approve(by="bob")
    me["now"] = Identity("carol", ["finance"])
    assert run.approve(by="carol").accepted
    assert run.run().state["paid"] is True


@pytest.mark.parametrize(
    ("entry", "path", "fragment"),
    [
        ('{node: pay, approvers: "bob"}', "$.interrupt_before[0].approvers", "must be a list"),
        ("{node: pay, approvers: []}", "$.interrupt_before[0].approvers", "at least 1"),
        ("{node: pay, separate_duties: maybe}", "$.interrupt_before[0].separate_duties", "true"),
        ('{node: pay, approvers: ["group:"]}', "$.interrupt_before[0]", "not a name"),
        ("{node: nope, approvers: [bob]}", "$.interrupt_before[0]", "not a node"),
        ("{approvers: [bob]}", "$.interrupt_before[0].node", "'node' is missing"),
    ],
)
def test_a_bad_approver_entry_in_a_file_is_a_schema_problem_at_its_path(
    entry: str, path: str, fragment: str
) -> None:
    doc = POLICY_DOC.split("interrupt_before:")[0] + f"interrupt_before: [{entry}]\n"
    registry = {"plan": lambda s: None, "pay": lambda s: None}
    with pytest.raises(SchemaError) as caught:
        load_workflow(doc, registry=registry, format="yaml")
    [problem] = caught.value.problems
    assert problem.path == path
    assert fragment in str(problem)
    assert problem.fix


def test_a_file_names_a_subgraph_from_the_registry() -> None:
    inner = StateGraph("inner").add_node("look", lambda s: {"found": s["topic"], "tmp": 1})
    document = {
        "kind": "workflow",
        "name": "outer",
        "entry": "plan",
        "nodes": [
            "plan",
            {"name": "research", "subgraph": "inner", "output_keys": ["found"]},
        ],
        "edges": [{"source": "plan", "target": "research"}],
    }
    registry = {"plan": lambda s: {"topic": "otters"}, "inner": inner.set_entry_point("look")}
    run = load_workflow(json.dumps(document), registry=registry).compile().invoke({})
    assert run.state == {"topic": "otters", "found": "otters"}
    assert run.children()[0].status == "completed"


def test_a_subgraph_reference_that_is_not_a_graph_or_has_fn_too_is_a_problem() -> None:
    document = {
        "kind": "workflow",
        "name": "outer",
        "entry": "research",
        "nodes": [{"name": "research", "subgraph": "inner"}],
    }
    with pytest.raises(SchemaError) as caught:
        load_workflow(json.dumps(document), registry={"inner": lambda s: None})
    assert [p.path for p in caught.value.problems] == ["$.nodes[0].subgraph"]
    assert "not a StateGraph or a compiled Workflow" in caught.value.problems[0].message
    both = {**document, "nodes": [{"name": "research", "subgraph": "inner", "fn": "inner"}]}
    inner = StateGraph("inner").add_node("x", lambda s: None).set_entry_point("x")
    with pytest.raises(SchemaError) as caught:
        load_workflow(json.dumps(both), registry={"inner": inner})
    assert [p.path for p in caught.value.problems] == ["$.nodes[0].fn"]
