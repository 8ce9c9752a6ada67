"""A closed panel leaves a snapshot of how things stood when it closed, never the status it
showed when it was displayed (notebook 02 under Run All: a completed run said "pending")."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import nbformat
import pytest
from machine_support import traffic_light
from nbclient import NotebookClient

from agentnb import Identity, SqliteCheckpointer
from agentnb.examples import build_refund_graph, build_refund_workflow
from agentnb.widgets import MachineView, RunView
from agentnb.widgets._snapshot import CLOSED_NOTE, NOTE
from tests.kernels import ipc_config


def record_displays(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any], Any]]:
    """Every display and display update, as (kind, bundle, display_id)."""
    seen: list[tuple[str, dict[str, Any], Any]] = []
    monkeypatch.setattr(
        "IPython.display.display",
        lambda data, **kw: seen.append(("display", data, kw.get("display_id"))),
    )
    monkeypatch.setattr(
        "IPython.display.update_display",
        lambda data, **kw: seen.append(("update", data, kw.get("display_id"))),
    )
    return seen


def test_closing_a_run_view_replaces_its_snapshot_with_the_state_at_close(
    store: SqliteCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = record_displays(monkeypatch)
    run = build_refund_workflow(store, []).start({"requested": 1000})
    run.run()
    v = RunView(run)
    v._ipython_display_()
    run.approve(by="maria")
    run.run()
    v.close()
    v.close()  # twice: nothing more to replace

    widget, shown, left = seen  # the widget, its snapshot, and the snapshot's replacement
    assert widget[2] is None  # the live widget itself is not replaced
    assert "· pending" in shown[1]["text/plain"]
    assert shown[1]["text/plain"].endswith(NOTE)
    assert left[0] == "update"
    assert left[2] == shown[2] is not None
    assert "· completed" in left[1]["text/plain"]
    assert "pending" not in left[1]["text/plain"].splitlines()[0]
    assert left[1]["text/plain"].endswith(CLOSED_NOTE)
    assert "live view" not in left[1]["text/html"]


def test_closing_a_machine_view_replaces_its_snapshot_too(
    store: SqliteCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = record_displays(monkeypatch)
    light = traffic_light().start("crossing-3", store=store)
    v = MachineView(light)
    v._ipython_display_()
    light.send("timer")
    v.close()
    kinds = [kind for kind, _, _ in seen]
    assert kinds == ["display", "display", "update"]
    assert seen[2][2] == seen[1][2]
    assert "--timer--> GREEN" in seen[2][1]["text/plain"]
    assert seen[2][1]["text/plain"].endswith(CLOSED_NOTE)


def test_a_panel_whose_store_closed_first_says_so_instead_of_a_status(
    store: SqliteCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = record_displays(monkeypatch)
    run = build_refund_workflow(store, []).start({"requested": 1000})
    run.run()
    v = RunView(run)
    v._ipython_display_()
    store.close()
    v.close()
    kind, left, _ = seen[-1]
    assert kind == "update"
    assert "closed" in left["text/plain"]
    assert "pending" not in left["text/plain"]


def test_the_closed_snapshot_shows_the_vouched_identity_beside_the_typed_name(
    store: SqliteCheckpointer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = record_displays(monkeypatch)
    workflow = build_refund_graph([]).compile(store, identity=lambda: Identity("ada"))
    run = workflow.start({"requested": 1000})
    run.run()
    v = RunView(run)
    v._ipython_display_()
    run.approve(by="Ada L.")
    run.run()
    v.close()
    left = seen[-1][1]
    assert "decided by Ada L. (identity ada)" in left["text/plain"].splitlines()
    assert "decided by Ada L. (identity ada)" in left["text/html"]


NOTEBOOK = textwrap.dedent(
    """
    from agentnb import SqliteCheckpointer
    from agentnb.examples import build_refund_workflow
    store = SqliteCheckpointer("runs.sqlite3")
    run = build_refund_workflow(store, []).start({"requested": 1000}, run_id="refund-1000")
    run.run()
    panel = run.view()
    panel
    ---
    run.approve(by="maria")
    run.run()
    panel.close()
    store.close()
    """
)


@pytest.mark.slow
def test_under_run_all_the_closed_panel_leaves_the_completed_run_in_the_saved_output(
    tmp_path: Path,
) -> None:
    cells = [nbformat.v4.new_code_cell(src.strip()) for src in NOTEBOOK.split("---")]
    notebook = nbformat.v4.new_notebook(cells=cells)
    resources = {"metadata": {"path": str(tmp_path)}}
    NotebookClient(notebook, config=ipc_config(), timeout=120, resources=resources).execute()
    outputs = notebook.cells[0].outputs
    texts = [o["data"]["text/plain"] for o in outputs if "text/plain" in o.get("data", {})]
    snapshot = next(t for t in texts if "refund · run refund-1000" in t)
    assert "· completed" in snapshot
    assert "awaiting approval" not in snapshot.splitlines()[0]
    assert snapshot.endswith(CLOSED_NOTE)
    html = next(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    assert "completed" in html
    assert "run the notebook for the live view" not in html
