"""<invoke>: inline SCXML child sessions — events both ways, done.invoke, cancel, durability."""

from __future__ import annotations

from pathlib import Path

from agentnb import ManualClock, SqliteCheckpointer, load_scxml

HEAD = 'xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="python"'

PARENT = f"""
<scxml {HEAD} initial="job" name="parent">
  <datamodel><data id="got" expr="None"/><data id="seed" expr="20"/></datamodel>
  <state id="job" initial="waiting">
    <invoke id="worker" namelist="seed">
      <finalize><assign location="got" expr="_event.data.get('n')"/></finalize>
      <content>
        <scxml {HEAD} initial="busy" name="child">
          <datamodel><data id="seed" expr="0"/></datamodel>
          <state id="busy">
            <onentry><send target="#_parent" event="progress" delay="5s">
              <param name="n" expr="seed + 1"/></send></onentry>
            <transition event="stop" target="end"/>
          </state>
          <final id="end"><donedata><param name="why" expr="'stopped'"/></donedata></final>
        </scxml>
      </content>
    </invoke>
    <state id="waiting"><transition event="progress" target="told"/></state>
    <state id="told"><onentry><send target="#_worker" event="stop"/></onentry></state>
    <transition event="done.invoke.worker" target="finished">
      <assign location="got" expr="_event.data"/>
    </transition>
  </state>
  <final id="finished"/>
  <state id="cancelled"/>
</scxml>
"""


def test_a_child_session_talks_to_its_parent_and_ends_with_done_invoke() -> None:
    clock = ManualClock()
    parent = load_scxml(PARENT).start(clock=clock)
    [timer] = parent.timers()  # the child's delayed send is a timer of the instance
    assert (timer.event, timer.fire_at) == ("progress", 5.0)
    clock.advance(5)
    parent.run_due()
    assert parent.configuration == {"finished"}
    assert parent.context["got"] == {"why": "stopped"}


def test_the_finalize_content_runs_before_the_parent_selects_transitions() -> None:
    text = PARENT.replace('target="told"', 'cond="got == 21" target="told"')
    clock = ManualClock()
    parent = load_scxml(text).start(clock=clock)
    clock.advance(5)
    parent.run_due()
    assert parent.in_state("finished")  # got was 21 when the transition was chosen


def test_a_child_and_its_timers_survive_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "invoke.sqlite3"
    chart = load_scxml(PARENT)
    with SqliteCheckpointer(db) as store:
        chart.start("p1", store=store, clock=ManualClock(0))
    with SqliteCheckpointer(db) as store:
        parent = chart.resume("p1", store=store, clock=ManualClock(10))
        assert [t.event for t in parent.timers()] == ["progress"]
        parent.run_due()
        assert parent.configuration == {"finished"}


def test_leaving_the_invoking_state_cancels_the_child_and_its_delayed_sends() -> None:
    text = PARENT.replace(
        '<transition event="done.invoke.worker" target="finished">',
        '<transition event="quit" target="cancelled"/>'
        '<transition event="done.invoke.worker" target="finished">',
    )
    clock = ManualClock()
    parent = load_scxml(text).start(clock=clock)
    parent.send("quit")
    clock.advance(5)
    [fired] = parent.run_due()
    assert fired.ignored  # the child ended: its delayed send is dropped, never delivered
    assert parent.configuration == {"cancelled"}


def test_to_scxml_writes_the_invoke_and_the_child_document() -> None:
    chart = load_scxml(PARENT)
    again = load_scxml(chart.to_scxml())
    assert again.to_scxml() == chart.to_scxml()
    clock = ManualClock()
    parent = again.start(clock=clock)
    clock.advance(5)
    parent.run_due()
    assert parent.configuration == {"finished"}
