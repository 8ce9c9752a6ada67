"""Loading machines from JSON/YAML: valid files, a corpus of broken ones, and fuzzing."""

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

from agentnb.errors import MissingDependency, SchemaError
from agentnb.fsm import StateMachine, load_machine, validate_file
from agentnb.fsm.document import MAX_BYTES, MAX_ITEMS, MAX_PROBLEMS, MORE_PROBLEMS
from agentnb.fsm.loader import machine_schema
from tests.document_fuzz import json_values as json_values_of
from tests.document_fuzz import mutated

HERE = Path(__file__).parent
INVALID = HERE / "invalid"
DATA = HERE / "data"

cycles: list[str] = []


def _count_cycle(context: dict[str, Any], payload: Any) -> dict[str, Any]:
    cycles.append("green")
    return {"cycles": context.get("cycles", 0) + 1}


def _road_clear(context: dict[str, Any], payload: Any) -> bool:
    return True


REGISTRY = {"count_cycle": _count_cycle, "road_clear": _road_clear}

NESTED = "nested more than 32 levels deep"

# file -> [(JSON path, fragment of "path: message (fix)")], every problem the file must report.
EXPECTED: dict[str, list[tuple[str, str]]] = {
    # reading
    "malformed.json": [("$", "invalid JSON at line 4, column 3: Expecting ',' delimiter")],
    "malformed.yaml": [("$", "invalid YAML at line 4, column 2")],
    "empty.json": [("$", "the document is empty")],
    "only_comments.yaml": [("$", "the document is empty")],
    "top_level_list.json": [("$", "must be an object, not a list")],
    "top_level_string.yaml": [("$", 'must be an object, not the string "traffic light"')],
    "utf16.json": [("$", "UTF-16 encoded (Save it as UTF-8)")],
    "latin1.json": [("$", "not valid UTF-8")],
    "deep_nesting.json": [("$", NESTED)],
    # libyaml stops at its own limit first; the pure-Python parser reaches ours.
    "deep_nesting.yaml": [("$", "nest")],
    "deep_block_nesting.yaml": [("$", NESTED)],
    "duplicate_key.json": [("$.initial", "duplicate key 'initial'")],
    "duplicate_key.yaml": [("$.initial", "duplicate key 'initial' at line 5 (first at line 3)")],
    "yaml_alias.yaml": [("$", "aliases and anchors are not supported")],
    "yaml_python_tag.yaml": [("$", "could not determine a constructor for the tag")],
    "yaml_two_documents.yaml": [("$", "expected a single document")],
    "json_nan.json": [("$", "NaN is not a JSON value")],
    "huge_integer.json": [("$", "digits")],
    "yaml_date.yaml": [("$.description", "a YAML date value is not allowed here")],
    "yaml_non_string_key.yaml": [("$", "key 1 is not a string")],
    # schema
    "missing_initial.json": [("$.initial", "required key 'initial' is missing")],
    "missing_states.yaml": [("$.states", "required key 'states' is missing")],
    "unknown_top_key.json": [("$.tranistions", "Did you mean 'transitions'?")],
    "empty_states.json": [("$.states", "must have at least 1 item")],
    "state_wrong_type.json": [("$.states[1]", "must be a string or an object, not the number 7")],
    "bad_state_name.yaml": [("$.states[0]", '"red light" is not a valid name')],
    "state_unknown_key.json": [("$.states[0].enter", "Did you mean 'on_enter'?")],
    "transition_missing_target.json": [
        ("$.transitions[1].target", "required key 'target' is missing")
    ],
    "transition_unknown_key.yaml": [
        ("$.transitions[0].target", "required key 'target' is missing"),
        ("$.transitions[0].to", "unknown key 'to'"),
    ],
    "transitions_nested_dict.json": [("$.transitions", "must be a list, not an object")],
    "name_wrong_type.yaml": [("$.name", "must be a string, not the number 42")],
    "yaml_boolean_event.yaml": [
        ("$.transitions[0].event", "quote words like on, off, yes and no"),
        ("$.transitions[1].event", "must be a string, not false"),
    ],
    "wrong_kind.json": [("$.kind", 'must be "state_machine", not the string "workflow"')],
    "name_too_long.json": [("$.name", "is 74 characters long; at most 64")],
    "label_wrong_type.json": [("$.transitions[0].label", "must be a string, not the number 3")],
    "final_not_list.json": [("$.final", 'must be a list, not the string "yellow"')],
    # rules the schema cannot express
    "unknown_target.json": [("$.transitions[1].target", "unknown target state 'blue'")],
    "unknown_source.yaml": [("$.transitions[0].source", "did you mean 'red'?")],
    "unknown_initial.json": [("$.initial", "initial state 'purple' is not one of the states")],
    "unknown_final.json": [("$.final[0]", "final state 'off' is not one of the states")],
    "unreachable_state.json": [("$.states[3]", "'broken' cannot be reached")],
    "stuck_state.json": [("$.states[3]", "'off' has no outgoing transitions but is not final")],
    "duplicate_unguarded.json": [("$.transitions[3]", "second transition without a guard")],
    "unguarded_not_last.json": [("$.transitions[1]", "so it can never be chosen")],
    "final_with_outgoing.json": [
        ("$.transitions[4].source", "final state 'off' has an outgoing transition")
    ],
    "duplicate_state.yaml": [("$.states[3]", "state 'green' is declared more than once")],
    "unknown_guard.json": [("$.transitions[0].guard", "unknown guard 'is_rush_hour'")],
    "unknown_hook.yaml": [("$.states[1].on_enter", "unknown on_enter 'beep'")],
    "many_problems.json": [
        ("$.name", '"traffic light" is not a valid name'),
        ("$.transitions[1].event", "required key 'event' is missing"),
        ("$.transitions[1].evnt", "Did you mean 'event'?"),
        ("$.transitions[0].target", "unknown target state 'blue'"),
    ],
}


def test_the_corpus_and_its_expectations_match_one_to_one() -> None:
    files = {p.name for p in INVALID.iterdir()}
    assert files == set(EXPECTED)
    assert len(files) >= 25


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_broken_file_reports_exactly_its_problems(name: str) -> None:
    with pytest.raises(SchemaError) as caught:
        load_machine(INVALID / name, registry=REGISTRY)
    problems = caught.value.problems
    assert [p.path for p in problems] == [path for path, _ in EXPECTED[name]]
    for problem, (_, fragment) in zip(problems, EXPECTED[name], strict=True):
        assert fragment in str(problem)
        assert problem.fix, f"{problem} has no fix"
    assert caught.value.source == str(INVALID / name)
    assert validate_file(INVALID / name, registry=REGISTRY) == problems


def test_the_error_message_lists_every_problem_with_its_path() -> None:
    with pytest.raises(SchemaError) as caught:
        load_machine(INVALID / "many_problems.json", registry=REGISTRY)
    message = str(caught.value)
    assert message.startswith(f"4 problems in {INVALID / 'many_problems.json'}:")
    assert "\n  - $.transitions[0].target: transition red --timer--> blue" in message


def test_the_shipped_schema_is_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(machine_schema())


@pytest.mark.parametrize("name", ["traffic_light.json", "traffic_light.yaml"])
def test_a_valid_file_loads_into_a_working_machine(name: str) -> None:
    lights = load_machine(DATA / name, registry=REGISTRY)
    assert lights.name == "traffic_light"
    assert lights.states == ("RED", "GREEN", "YELLOW")
    assert [t.label for t in lights.transitions] == ["go", None, None]
    light = lights.start()
    light.send("timer")
    assert light.context == {"cycles": 1}


def test_json_and_yaml_forms_define_the_same_machine() -> None:
    def shape(m: StateMachine) -> Any:
        return (m.name, m.states, m.initial, m.final, [str(t) for t in m.transitions])

    from_json = load_machine(DATA / "traffic_light.json", registry=REGISTRY)
    from_yaml = load_machine(DATA / "traffic_light.yaml", registry=REGISTRY)
    assert shape(from_json) == shape(from_yaml)


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    assert (DATA / "traffic_light_bom.json").read_bytes().startswith(codecs.BOM_UTF8)
    lights = load_machine(DATA / "traffic_light_bom.json", registry=REGISTRY)
    assert lights.initial == "RED"


def test_text_bytes_and_paths_are_all_accepted() -> None:
    text = (DATA / "traffic_light.json").read_text()
    for source in (text, text.encode(), str(DATA / "traffic_light.json")):
        assert load_machine(source, registry=REGISTRY).name == "traffic_light"


def test_a_one_line_json_string_is_a_document_not_a_path() -> None:
    doc = '{"name": "m", "states": ["a"], "initial": "a", "final": ["a"]}'
    assert load_machine(doc).final == ("a",)


def test_a_missing_file_is_a_schema_error_that_explains_the_path_rule() -> None:
    with pytest.raises(SchemaError, match="cannot read the file") as caught:
        load_machine("no_such_machine.json")
    assert "a str without a newline is taken as a file name" in str(caught.value)


def test_the_format_can_be_forced_for_an_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "light.txt"
    path.write_text((DATA / "traffic_light.yaml").read_text())
    assert load_machine(path, registry=REGISTRY, format="yaml").name == "traffic_light"


def test_names_in_the_file_are_never_imported() -> None:
    assert "antigravity" not in sys.modules
    doc = json.dumps(
        {
            "name": "m",
            "states": ["a", "b"],
            "initial": "a",
            "final": ["b"],
            "transitions": [
                {"source": "a", "event": "go", "target": "b", "guard": "antigravity.fly"}
            ],
        }
    )
    with pytest.raises(SchemaError, match=r"unknown guard 'antigravity\.fly'"):
        load_machine(doc)
    assert "antigravity" not in sys.modules


def test_a_registry_entry_that_is_not_callable_is_reported_where_it_is_used() -> None:
    doc = (DATA / "traffic_light.json").read_text()
    with pytest.raises(SchemaError) as caught:
        load_machine(doc, registry={"count_cycle": 42})
    assert [str(p) for p in caught.value.problems] == [
        "$.states[1].on_enter: registry entry 'count_cycle' used as on_enter is a int, not "
        "a function (Map the name to a function taking (context, payload))"
    ]


def test_validate_file_without_a_registry_checks_names_for_form_only() -> None:
    assert validate_file(DATA / "traffic_light.json") == []
    assert validate_file(INVALID / "unknown_guard.json") == []
    assert validate_file(INVALID / "unknown_guard.json", registry={}) != []


def test_a_document_over_the_size_limit_is_refused_unparsed() -> None:
    big = b'{"name": "' + b"x" * MAX_BYTES + b'"}'
    with pytest.raises(SchemaError, match=f"larger than {MAX_BYTES} bytes"):
        load_machine(big)


def test_a_list_longer_than_any_definition_needs_is_refused_before_validation() -> None:
    doc = json.dumps({"name": "m", "states": ["a"] * (MAX_ITEMS + 1), "initial": "a"})
    with pytest.raises(SchemaError) as caught:
        load_machine(doc)
    assert [str(p) for p in caught.value.problems] == [
        f"$.states: has {MAX_ITEMS + 1} entries; at most {MAX_ITEMS} are read (A definition "
        "is a few kilobytes: check that this is the right file)"
    ]


def test_past_the_cap_problems_are_cut_short_with_a_note() -> None:
    doc = json.dumps({"name": "m", "states": list(range(600)), "initial": "a"})
    with pytest.raises(SchemaError) as caught:
        load_machine(doc)
    problems = caught.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[0].path == "$.states"
    assert problems[-1] == MORE_PROBLEMS


@pytest.mark.slow
def test_a_table_at_the_schemas_limits_loads() -> None:
    states = [f"s{i}" for i in range(500)]
    ring = [
        {"source": s, "event": "next", "target": t}
        for s, t in zip(states, states[1:] + states[:1], strict=True)
    ]
    guarded = [
        {"source": "s0", "event": "jump", "target": s, "guard": "road_clear"} for s in states
    ]
    doc = {"name": "big", "states": states, "initial": "s0", "transitions": ring + guarded * 9}
    machine = load_machine(json.dumps(doc), registry=REGISTRY)
    assert len(machine.transitions) == 5000


def test_a_hostile_run_of_quotes_and_backslashes_is_scanned_in_linear_time() -> None:
    with pytest.raises(SchemaError, match="invalid JSON"):
        load_machine('["' + '\\"' * 300_000)


def test_without_jsonschema_loading_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(MissingDependency) as caught:
        load_machine(DATA / "traffic_light.json", registry=REGISTRY)
    assert (caught.value.package, caught.value.extra) == ("jsonschema", "config")
    assert 'pip install "agentnb[config]"' in str(caught.value)


def test_without_pyyaml_yaml_files_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)
    with pytest.raises(MissingDependency) as caught:
        load_machine(DATA / "traffic_light.yaml", registry=REGISTRY)
    assert (caught.value.package, caught.value.extra) == ("pyyaml", "config")


def test_importing_agentnb_fsm_needs_no_optional_dependency() -> None:
    code = (
        "import sys, agentnb.fsm\n"
        "loaded = {'yaml', 'jsonschema', 'watchfiles'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- fuzzing -----------------------------------------------------------------------------

WORDS = [
    "name", "states", "initial", "final", "transitions", "source", "event", "target",
    "guard", "action", "label", "kind", "on_enter", "on_exit", "description",
    "red", "green", "timer", "road_clear", "count_cycle", "state_machine", "a b", "",
]  # fmt: skip

json_values = json_values_of(WORDS)


def _load_or_refuse(source: str | bytes, fmt: Any = None) -> None:
    try:
        machine = load_machine(source, registry=REGISTRY, format=fmt)
    except SchemaError as error:
        problems = error.problems
    else:
        machine.validate()  # loaded means whole: the definition passes every rule
        return
    assert problems
    assert all(p.path.startswith("$") for p in problems)


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(raw=st.binary(max_size=400), fmt=st.sampled_from(["json", "yaml", None]))
def test_fuzz_arbitrary_bytes_only_ever_give_schema_errors(raw: bytes, fmt: Any) -> None:
    _load_or_refuse(raw, fmt)


@pytest.mark.slow
@FUZZ
@given(value=json_values, as_yaml=st.booleans())
def test_fuzz_generated_documents_only_ever_give_schema_errors(value: Any, as_yaml: bool) -> None:
    text = yaml.safe_dump(value) if as_yaml else json.dumps(value)
    _load_or_refuse(text.encode(), "yaml" if as_yaml else "json")


NAMES = ["RED", "GREEN", "YELLOW", "BLUE", "timer", "road_clear", "count_cycle", "x y"]


def mutated_light() -> st.SearchStrategy[Any]:
    return mutated(DATA / "traffic_light.json", NAMES)


@pytest.mark.slow
@FUZZ
@given(doc=mutated_light(), as_yaml=st.booleans())
def test_fuzz_mutated_valid_files_only_ever_give_schema_errors(doc: Any, as_yaml: bool) -> None:
    text = yaml.safe_dump(doc) if as_yaml else json.dumps(doc)
    _load_or_refuse(text, "yaml" if as_yaml else "json")
