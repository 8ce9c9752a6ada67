"""load_scxml: what it reads, what it refuses (element and line); a file never runs code."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentnb import ManualClock, ScxmlError, UnsupportedElement, load_scxml

HEAD = '<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="python"'


def doc(body: str, attrs: str = 'initial="s"') -> str:
    return f"{HEAD} {attrs}>\n{body}\n</scxml>"


def test_a_document_with_nesting_parallel_history_and_data_runs() -> None:
    chart = load_scxml(
        doc(
            """
  <datamodel><data id="count" expr="0"/><data id="items">[1, 2, 3]</data></datamodel>
  <state id="s" initial="p">
    <parallel id="p">
      <state id="a">
        <state id="a1"><transition event="go" target="a2"/></state><state id="a2"/>
      </state>
      <state id="b"><state id="b1"/></state>
      <transition event="leave" target="t"/>
    </parallel>
    <history id="h" type="deep"/>
  </state>
  <state id="t">
    <onentry>
      <foreach array="items" item="i"><assign location="count" expr="count + i"/></foreach>
    </onentry>
    <transition event="back" target="h"/>
  </state>"""
        )
    )
    instance = chart.start()
    assert instance.configuration == {"s", "p", "a", "a1", "b", "b1"}
    instance.send("go")
    instance.send("leave")
    assert instance.context["count"] == 6
    instance.send("back")
    assert instance.configuration == {"s", "p", "a", "a2", "b", "b1"}


def test_a_path_is_read_as_a_file(tmp_path: Path) -> None:
    path = tmp_path / "m.scxml"
    path.write_text(doc('<state id="s"/>'), encoding="utf-8")
    assert load_scxml(path).start().configuration == {"s"}
    assert load_scxml(str(path)).start().configuration == {"s"}


def test_delayed_sends_and_cancel_from_a_file_use_the_clock() -> None:
    chart = load_scxml(
        doc(
            """
  <state id="s">
    <onentry>
      <send event="tick" delay="2s" id="t1"/>
      <send event="boom" delayexpr="'1.5s'" id="t2"/>
      <cancel sendid="t2"/>
    </onentry>
    <transition event="boom" target="bad"/>
    <transition event="tick" target="good"/>
  </state>
  <final id="good"/><final id="bad"/>"""
        )
    )
    clock = ManualClock()
    instance = chart.start(clock=clock)
    assert [(t.event, t.fire_at) for t in instance.timers()] == [("tick", 2.0)]
    clock.advance(2)
    instance.run_due()
    assert instance.configuration == {"good"}


@pytest.mark.parametrize(
    ("body", "element", "line"),
    [
        ('<state id="s">\n<invoke type="scxml" src="child.scxml"/>\n</state>', "invoke", 3),
        ('<state id="s"><onentry>\n<script>import os</script></onentry></state>', "script", 3),
        (
            '<state id="s"><onentry>\n<send event="x" target="http://example.com/"/>'
            "</onentry></state>",
            "send",
            3,
        ),
        (
            '<state id="s"><onentry>\n<send event="x" '
            'type="http://www.w3.org/TR/scxml/#BasicHTTPEventProcessor"/></onentry></state>',
            "send",
            3,
        ),
        (
            '<datamodel>\n<data id="d" src="file:/etc/passwd"/></datamodel><state id="s"/>',
            "data",
            3,
        ),
        ('<state id="s">\n<blink/></state>', "blink", 3),
        ('<state id="s" xmlns:x="urn:x">\n<x:thing/></state>', "thing", 3),
    ],
)
def test_unsupported_elements_are_refused_with_their_name_and_line(
    body: str, element: str, line: int
) -> None:
    with pytest.raises(UnsupportedElement) as refused:
        load_scxml(doc(body))
    assert (refused.value.element, refused.value.line) == (element, line)
    assert f"line {line}" in str(refused.value)


def test_a_doctype_and_entities_are_refused_so_nothing_is_expanded_or_read() -> None:
    laughs = (
        '<?xml version="1.0"?>\n<!DOCTYPE scxml [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;">]>\n'
        + doc('<state id="s"><onentry><log expr="\'&b;\'"/></onentry></state>')
    )
    with pytest.raises(UnsupportedElement, match="DOCTYPE"):
        load_scxml(laughs)
    external = (
        '<?xml version="1.0"?>\n<!DOCTYPE scxml [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
        + doc('<state id="s"/>')
    )
    with pytest.raises(UnsupportedElement, match="DOCTYPE"):
        load_scxml(external)


def test_malformed_xml_is_a_scxml_error_with_its_line() -> None:
    with pytest.raises(ScxmlError) as bad:
        load_scxml(f'{HEAD} initial="s">\n<state id="s">\n</scxml>')
    assert bad.value.line == 3


def test_an_unknown_target_is_a_scxml_error() -> None:
    with pytest.raises(ScxmlError, match="'nowhere'"):
        load_scxml(doc('<state id="s"><transition event="e" target="nowhere"/></state>'))


def test_a_hostile_expression_in_a_file_becomes_error_execution_and_runs_nothing(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "pwned"
    chart = load_scxml(
        doc(
            f"""
  <datamodel><data id="x" expr="0"/></datamodel>
  <state id="s">
    <onentry>
      <assign location="x" expr="__import__('os').system('touch {marker}')"/>
    </onentry>
    <transition event="error.execution" target="caught"/>
  </state>
  <final id="caught"/>"""
        )
    )
    assert chart.start().configuration == {"caught"}
    assert not marker.exists()


def test_system_variables_are_readable_and_not_assignable() -> None:
    chart = load_scxml(
        doc(
            """
  <datamodel><data id="who" expr="_name"/><data id="sid" expr="_sessionid"/></datamodel>
  <state id="s">
    <onentry><assign location="_sessionid" expr="'mine'"/></onentry>
    <transition event="error.execution" cond="sid == _sessionid" target="ok"/>
  </state>
  <final id="ok"/>""",
            'initial="s" name="machineName"',
        )
    )
    instance = chart.start("session-1")
    assert instance.configuration == {"ok"}
    assert instance.context == {"who": "machineName", "sid": "session-1"}


def test_to_scxml_round_trips_a_chart_that_behaves_the_same() -> None:
    from agentnb import Final, History, Parallel, State, Statechart
    from agentnb.fsm import Assign, Log, Raise, Send

    chart = Statechart(
        "player",
        [
            State("off", on={"power": "h"}),
            State(
                "on",
                states=[
                    Parallel(
                        "p",
                        states=[
                            State("track", states=[State("t1", on={"next": "t2"}), State("t2")]),
                            State("vol", states=[State("low", on={"up": "high"}), State("high")]),
                        ],
                    ),
                    History("h", deep=True),
                ],
                on={
                    "power": {"target": "off", "action": [Assign("presses", "presses + 1")]},
                    "eject": {"target": "done", "guard": "presses >= 1"},
                },
                on_enter=[Log("on", "presses"), Raise("entered")],
                after={30: "off"},
            ),
            Final("done"),
        ],
        datamodel={"presses": 0},
    )
    text = chart.to_scxml()
    again = load_scxml(text)
    assert again.to_scxml() == text
    events = ["power", "next", "up", "power", "power", "eject"]
    results = []
    for c in (chart, again):
        instance = c.start("x", clock=ManualClock())
        results.append([sorted(instance.send(e).target.split()) for e in events])
        results.append(sorted(instance.configuration))
    assert results[0] == results[2]
    assert results[1] == results[3] == ["done"]
    assert results[0][4] == ["high", "t2"]  # deep history restored both regions
    assert isinstance(Send("x"), Send)


def test_to_scxml_refuses_python_functions_by_name() -> None:
    from agentnb import DefinitionError, State, Statechart

    def ring(context: object, payload: object) -> None:
        return None

    chart = Statechart("bell", [State("s", on={"press": {"action": ring}})])
    with pytest.raises(DefinitionError, match="'ring'"):
        chart.to_scxml()


def test_a_document_nested_too_deeply_is_refused_before_anything_recurses() -> None:
    deep = '<state id="s0">' + "".join(f'<state id="s{i}">' for i in range(1, 300))
    deep += "</state>" * 300
    with pytest.raises(ScxmlError, match="nested deeper than 100"):
        load_scxml(doc(deep, 'initial="s0"'))


def test_a_huge_document_is_refused_unread() -> None:
    with pytest.raises(ScxmlError, match="more than"):
        load_scxml(doc("<!--" + "x" * 2_100_000 + '--><state id="s"/>'))
