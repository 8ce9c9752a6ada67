"""State machines and their instances drawn in the workflows' visual grammar.

The drawing is exactly the transition table: each state once, the START marker on the
initial state, one edge per transition labelled with its event (and ``[guard]``), parallel
transitions kept apart by key; an instance lights its current state, its path with counts
and its last transition.
"""

from __future__ import annotations

import io
import json
import re
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from render_graphs import SVG, assert_snapshot, parse_svg

from agentnb.cli import main
from agentnb.errors import AgentnbError
from agentnb.fsm import MachineInstance, StateMachine
from agentnb.render.display import SVG_MIME, mimebundle
from agentnb.render.dot import to_dot
from agentnb.render.export import draw, load_definition
from agentnb.render.extract import (
    diagram_for,
    diagram_from_instance,
    diagram_from_machine,
    overlay_from_history,
)
from agentnb.render.model import EdgeKind, NodeKind
from agentnb.render.svg import render_svg
from agentnb.render.text import to_text
from tests.fsm.fsm_support import Light
from tests.fsm.fsm_support import traffic_light as timer_light


def traffic_light() -> StateMachine:
    """The seed's light: timer cycles the colours, emergency turns it red from anywhere."""
    lights = timer_light()
    lights.add_transition(Light.GREEN, "emergency", Light.RED)
    lights.add_transition(Light.YELLOW, "emergency", Light.RED)
    return lights


def small_amount(context: dict[str, Any], payload: Any) -> bool:
    return bool(payload and payload.get("amount", 0) < 100)


def manager_ok(context: dict[str, Any], payload: Any) -> bool:
    return bool(payload and payload.get("manager"))


def notify(context: dict[str, Any], payload: Any) -> None:
    return None


def expense() -> StateMachine:
    """Guards, a hook, finals, and two guarded transitions between the same two states."""
    m = StateMachine(
        "expense",
        ["draft", "review", "approved", "paid", "withdrawn"],
        initial="draft",
        final=["paid", "withdrawn"],
    )
    m.add_transition("draft", "submit", "review")
    m.add_transition("draft", "withdraw", "withdrawn")
    m.add_transition("review", "approve", "approved", guard=small_amount)
    m.add_transition("review", "approve", "approved", guard=manager_ok, label="escalated")
    m.add_transition("review", "reject", "draft")
    m.add_transition("approved", "pay", "paid")
    m.on_enter("approved", notify)
    return m


def svg_ids(svg: str) -> dict[str, set[str]]:
    """Every node and edge group's decoded id -> its classes."""
    found: dict[str, set[str]] = {}
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        classes = set(g.get("class", "").split())
        if classes & {"agentnb-node", "agentnb-edge"}:
            gid = urllib.parse.unquote(g.get("id", ""))
            assert gid not in found, f"{gid} drawn twice"
            found[gid] = classes
    return found


# -- the transition table -------------------------------------------------------------


def test_traffic_light_snapshot() -> None:
    assert_snapshot("machine_traffic_light.dot", to_dot(diagram_from_machine(traffic_light())))


def test_guards_and_parallel_transitions_snapshot() -> None:
    assert_snapshot("machine_expense.dot", to_dot(diagram_from_machine(expense(), direction="TB")))


def test_each_state_is_one_node_and_each_transition_one_edge() -> None:
    d = diagram_from_machine(traffic_light())
    assert [(n.id, n.kind, n.entry) for n in d.nodes] == [
        ("START", NodeKind.START, False),
        ("RED", NodeKind.NORMAL, True),
        ("GREEN", NodeKind.NORMAL, False),
        ("YELLOW", NodeKind.NORMAL, False),
    ]
    assert [(e.source, e.target, e.text, e.key) for e in d.edges] == [
        ("START", "RED", None, ""),
        ("RED", "GREEN", "timer", "timer"),
        ("GREEN", "YELLOW", "timer", "timer"),
        ("YELLOW", "RED", "timer", "timer"),
        ("GREEN", "RED", "emergency", "emergency"),
        ("YELLOW", "RED", "emergency", "emergency"),
    ]
    assert d.title == "traffic_light"
    assert not d.legend  # nothing to explain: no guards, no instance


def test_guards_are_dashed_and_named_and_repeated_events_get_distinct_keys() -> None:
    d = diagram_from_machine(expense())
    approve = [e for e in d.edges if e.source == "review" and e.target == "approved"]
    assert [(e.text, e.key, e.kind) for e in approve] == [
        ("approve [small_amount]", "approve", EdgeKind.CONDITIONAL),
        ("approve: escalated [manager_ok]", "approve#2", EdgeKind.CONDITIONAL),
    ]
    assert {n.id for n in d.nodes if n.kind is NodeKind.FINAL} == {"paid", "withdrawn"}
    approved = d.node("approved")
    assert approved is not None
    assert approved.description == "on enter: notify"
    assert d.legend  # guards are explained


def test_a_state_named_start_does_not_collide_with_the_marker() -> None:
    m = StateMachine("odd", ["START", "END"], initial="START", final=["END"])
    m.add_transition("START", "go", "END")
    d = diagram_from_machine(m)
    assert [n.id for n in d.nodes] == ["(START)", "START", "END"]
    assert [(e.source, e.target) for e in d.edges] == [("(START)", "START"), ("START", "END")]


def test_an_unfinished_machine_draws_what_is_there() -> None:
    m = StateMachine("wip", ["a", "b", "orphan"], initial="a")
    m.add_transition("a", "go", "b")  # b is a dead end, orphan unreachable: still drawable
    assert [n.id for n in diagram_from_machine(m).nodes] == ["START", "a", "b", "orphan"]


# -- instances ------------------------------------------------------------------------


def midway() -> MachineInstance:
    light = traffic_light().start("crossing", strict=False)
    light.send("timer")
    light.send("walk")  # not allowed: recorded as ignored, traverses nothing
    light.send("timer")
    return light


def test_instance_midway_snapshot() -> None:
    assert_snapshot("machine_traffic_light_midway.dot", to_dot(diagram_from_instance(midway())))


def test_instance_overlay_lights_current_path_and_last_transition() -> None:
    d = diagram_from_instance(midway())
    overlay = d.overlay
    assert overlay is not None
    assert (overlay.status, overlay.current, overlay.last) == (
        "running",
        "YELLOW",
        ("GREEN", "YELLOW"),
    )
    assert overlay.visited == ("RED", "GREEN", "YELLOW")
    assert overlay.traversed == (("START", "RED", 1), ("RED", "GREEN", 1), ("GREEN", "YELLOW", 1))
    assert d.title == "traffic_light · instance crossing · running"
    dot = to_dot(d)
    assert re.search(r'id="node-YELLOW", class="[^"]*\bis-current\b', dot)
    assert re.search(r'id="edge-GREEN~YELLOW~timer", class="[^"]*\bis-last\b', dot)
    assert len(re.findall(r"\bis-last\b", dot)) == 1


def test_counts_grow_with_each_lap() -> None:
    light = traffic_light().start()
    for _ in range(7):
        light.send("timer")
    overlay = diagram_from_instance(light).overlay
    assert overlay is not None
    assert overlay.count("RED", "GREEN") == 3
    assert overlay.count("YELLOW", "RED") == 2
    assert overlay.last == ("RED", "GREEN")
    assert "timer ×3" in to_dot(diagram_from_instance(light))


def test_reaching_a_final_state_completes_the_instance() -> None:
    claim = expense().start("c1")
    claim.send("submit")
    claim.send("approve", {"manager": True})
    claim.send("pay")
    d = diagram_from_instance(claim)
    assert d.overlay is not None
    assert (d.overlay.status, d.overlay.current, d.overlay.completed) == ("completed", "paid", True)
    assert 'class="agentnb-diagram run-completed"' in to_dot(d)
    assert "instance: completed — in paid" in to_text(d)


def test_a_machine_as_text_counts_states_and_transitions_and_says_where_it_is() -> None:
    light = traffic_light()
    crossing = light.start()
    crossing.send(next(iter(light.allowed_events(light.initial))))
    text = to_text(diagram_from_instance(crossing))
    head = text.splitlines()[0]
    states, transitions = len(light.states), len(light.transitions)
    assert head.endswith(f": {states} states, {transitions} transitions")
    assert f"instance: running — in {crossing.state}" in text
    assert "next:" not in text


def test_a_fresh_instance_has_only_entered_its_initial_state() -> None:
    overlay = diagram_from_instance(traffic_light().start()).overlay
    assert overlay is not None
    assert (overlay.current, overlay.visited, overlay.last) == ("RED", ("RED",), ("START", "RED"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["timer", "emergency", "walk"]), max_size=25))
def test_the_overlay_is_the_replay_of_the_history(events: list[str]) -> None:
    light = traffic_light().start(strict=False)
    state, counts, visited = "RED", {("START", "RED"): 1}, ["RED"]
    nxt = {("RED", "timer"): "GREEN", ("GREEN", "timer"): "YELLOW", ("YELLOW", "timer"): "RED"}
    nxt |= {("GREEN", "emergency"): "RED", ("YELLOW", "emergency"): "RED"}
    for event in events:
        light.send(event)
        target = nxt.get((state, event))
        if target is not None:
            counts[state, target] = counts.get((state, target), 0) + 1
            visited += [target] * (target not in visited)
            state = target
    overlay = overlay_from_history(light.history, light.machine)
    assert overlay.current == state == light.state
    assert {(s, t): n for s, t, n in overlay.traversed} == counts
    assert list(overlay.visited) == visited


# -- SVG, display, export ---------------------------------------------------------------


def test_svg_has_each_state_once_with_its_id_and_classes() -> None:
    ids = svg_ids(render_svg(diagram_from_machine(expense())))
    nodes = {i.removeprefix("node-"): c for i, c in ids.items() if i.startswith("node-")}
    assert set(nodes) == {"START", "draft", "review", "approved", "paid", "withdrawn"}
    assert {"agentnb-node", "kind-normal", "kind-entry"} <= nodes["draft"]
    assert {"agentnb-node", "kind-final"} <= nodes["paid"]
    edges = {i for i in ids if i.startswith("edge-")}
    assert edges == {
        "edge-START~draft",
        "edge-draft~review~submit",
        "edge-draft~withdrawn~withdraw",
        "edge-review~approved~approve",
        "edge-review~approved~approve#2",
        "edge-review~draft~reject",
        "edge-approved~paid~pay",
    }
    assert "kind-conditional" in ids["edge-review~approved~approve#2"]


def test_instance_svg_carries_the_overlay_classes() -> None:
    ids = svg_ids(render_svg(diagram_from_instance(midway())))
    assert {"is-current", "is-visited"} <= ids["node-YELLOW"]
    assert {"is-traversed", "is-last"} <= ids["edge-GREEN~YELLOW~timer"]
    assert "is-traversed" not in ids["edge-YELLOW~RED~timer"]


def test_machines_and_instances_display_in_notebooks() -> None:
    bundle = mimebundle(traffic_light())
    assert bundle["text/plain"].startswith("traffic_light: 3 states, 5 transitions\n  RED  (entry)")
    assert set(parse_svg(bundle[SVG_MIME]).nodes) == {"START", "RED", "GREEN", "YELLOW"}
    bundle = mimebundle(midway())
    assert "  taken: START -> RED ×1, RED -> GREEN ×1, GREEN -> YELLOW ×1" in bundle["text/plain"]
    assert "is-current" in parse_svg(bundle[SVG_MIME]).nodes["YELLOW"][1]


def test_diagram_for_dispatches_on_machines_and_instances() -> None:
    assert diagram_for(traffic_light(), direction="TB").direction == "TB"
    assert diagram_for(midway()).overlay is not None
    with pytest.raises(TypeError, match="a StateMachine or a machine instance"):
        diagram_for(Light.RED)


def test_draw_writes_machines_and_instances(tmp_path: Path) -> None:
    dot = draw(traffic_light(), tmp_path / "light.dot").read_text(encoding="utf-8")
    assert dot == to_dot(diagram_from_machine(traffic_light()))
    svg = draw(midway(), tmp_path / "light.svg").read_text(encoding="utf-8")
    assert "is-current" in parse_svg(svg).nodes["YELLOW"][1]


# -- agentnb draw on a definition file --------------------------------------------------

GUARDED = {
    "name": "door",
    "states": ["closed", {"name": "open", "on_enter": "chime"}, "locked"],
    "initial": "closed",
    "transitions": [
        {"source": "closed", "event": "push", "target": "open", "guard": "unlocked"},
        {"source": "closed", "event": "lock", "target": "locked", "action": "log"},
        {"source": "locked", "event": "unlock", "target": "closed"},
        {"source": "open", "event": "pull", "target": "closed"},
    ],
}

BROKEN = {
    "name": "door",
    "states": ["closed", "open"],
    "initial": "shut",
    "transitions": [
        {"source": "closed", "event": "push", "target": "ajar"},
        {"source": "open", "evnt": "pull", "target": "closed"},
    ],
}


def test_cli_draws_a_json_definition_without_a_registry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "door.json"
    path.write_text(json.dumps(GUARDED), encoding="utf-8")
    out = tmp_path / "door.svg"
    assert main(["draw", str(path), "-o", str(out)]) == 0
    assert capsys.readouterr() == (f"wrote {out}\n", "")
    drawn = parse_svg(out.read_text(encoding="utf-8"))
    assert set(drawn.nodes) == {"START", "closed", "open", "locked"}
    assert drawn.edges["closed", "open"][0] == "push [unlocked]"
    assert drawn.nodes["open"][2] == "open\non enter: chime"  # hover text names the hook


def test_cli_draws_a_yaml_definition_as_dot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "light.yml"
    path.write_text(
        "name: light\nstates: [RED, GREEN]\ninitial: RED\ntransitions:\n"
        "  - {source: RED, event: timer, target: GREEN, guard: road_clear}\n"
        "  - {source: GREEN, event: timer, target: RED}\n",
        encoding="utf-8",
    )
    assert main(["draw", str(path), "-o", "-", "--direction", "TB"]) == 0
    dot = capsys.readouterr().out
    assert "rankdir=TB" in dot
    assert 'id="edge-RED~GREEN~timer"' in dot
    assert "label=<timer [road_clear&#93;>" in dot  # "]" escaped for Graphviz 2.43


def test_cli_lists_every_problem_of_a_broken_file_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "door.json"
    path.write_text(json.dumps(BROKEN), encoding="utf-8")
    assert main(["draw", str(path), "-o", str(tmp_path / "door.svg")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0] == f"agentnb draw: error: 4 problems in {path}:"
    problems = sorted(line.split(":")[0].strip(" -") for line in lines[1:])
    assert problems == [
        "$.initial",
        "$.transitions[0].target",
        "$.transitions[1].event",
        "$.transitions[1].evnt",
    ]
    assert not (tmp_path / "door.svg").exists()


def test_cli_reports_malformed_json_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"name": "x",\n  "states": [}', encoding="utf-8")
    assert main(["draw", str(path), "-o", str(tmp_path / "x.svg")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"agentnb draw: error: 1 problem in {path}:\n  - $: ")
    assert "line 2" in err


def test_cli_a_missing_definition_file_is_an_argument_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["draw", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "x.svg")]) == 2
    assert capsys.readouterr().err == (
        f"agentnb draw: error: no definition file {str(tmp_path / 'nope.yaml')!r}\n"
    )


def test_a_definition_loaded_for_drawing_refuses_to_run_its_placeholders(
    tmp_path: Path,
) -> None:
    path = tmp_path / "door.json"
    path.write_text(json.dumps(GUARDED), encoding="utf-8")
    door = load_definition(path).start()
    with pytest.raises(AgentnbError, match="guard 'unlocked' is a placeholder"):
        door.send("push")
    assert door.state == "closed"


def test_cli_draws_a_machine_or_instance_named_in_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    name = f"machines_{tmp_path.name}".replace("-", "_")
    (tmp_path / f"{name}.py").write_text(
        "from agentnb.fsm import StateMachine\n"
        "door = StateMachine('door', ['closed', 'open'], initial='closed')\n"
        "door.add_transition('closed', 'push', 'open')\n"
        "door.add_transition('open', 'pull', 'closed')\n"
        "def front():\n"
        "    d = door.start('front')\n"
        "    d.send('push')\n"
        "    return d\n",
        encoding="utf-8",
    )
    out = io.StringIO()
    try:
        assert main(["draw", f"{name}:door", "-o", "-"], out) == 0
        assert 'id="edge-closed~open~push"' in out.getvalue()
        out = io.StringIO()
        assert main(["draw", f"{name}:front", "-o", "-"], out) == 0
        assert re.search(r'id="node-open", class="[^"]*\bis-current\b', out.getvalue())
    finally:
        sys.modules.pop(name, None)


def test_parallel_transitions_between_two_states_are_lit_apart() -> None:
    light = traffic_light().start()
    light.send("timer")
    light.send("timer")
    light.send("timer")  # YELLOW --timer--> RED; the YELLOW --emergency--> RED edge stays dark
    dot = to_dot(diagram_from_instance(light))
    assert re.search(r'id="edge-YELLOW~RED~timer", class="[^"]*\bis-traversed\b[^"]*\bis-last', dot)
    emergency = re.search(r'id="edge-YELLOW~RED~emergency", class="([^"]*)"', dot)
    assert emergency is not None
    assert "is-traversed" not in emergency.group(1)
    assert "is-last" not in emergency.group(1)


def test_guarded_alternatives_on_one_event_are_lit_by_the_one_that_fired() -> None:
    claim = expense().start(strict=False)
    claim.send("submit")
    claim.send("approve", {"amount": 500, "manager": True})  # the escalated one fires
    assert claim.history[-1].transition == 3
    dot = to_dot(diagram_from_instance(claim))
    fired = re.search(r'id="edge-review~approved~approve%232", class="([^"]*)"', dot)
    other = re.search(r'id="edge-review~approved~approve", class="([^"]*)"', dot)
    assert fired is not None
    assert other is not None
    assert "is-last" in fired.group(1)
    assert "is-traversed" not in other.group(1)
