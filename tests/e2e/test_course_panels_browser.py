"""The course's own notebooks 06-09, run in JupyterLab: their panels say what the store says.

Each test runs a real notebook (served under ``course/``), drives its panel as a student
would, then reads the store the notebook wrote to — from this process, as another kernel
or the CLI would — and compares every label a teacher reads: the header, each log row, the
history pane at each step, the statechart's history and microsteps. A panel that drifts
from the recorded events fails here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from lab_support import Browser, Lab, open_notebook, run_widget, wait_for

from agentnb import Checkpointer, SqliteCheckpointer
from agentnb.widgets._events import frontier_text, next_texts, summarize

pytestmark = pytest.mark.browser

ROWS = """rows => rows.filter(r => r.dataset.seq).map(r => [r.dataset.seq,
    r.querySelector('.rv-type').textContent, r.querySelector('.rv-node').textContent,
    r.querySelector('.rv-sum').textContent])"""


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Any]:
    page = browser.new_page()
    yield page
    page.close()


# -- what the store says, as a RunView must show it ------------------------------------------


def expected_rows(store: Checkpointer, run_id: str) -> list[tuple[str, str, str, str]]:
    """Every event of the run as its log row reads: seq, type, node, summary — a
    ``state_update`` row names the next superstep as the whole step's updates do."""
    events = store.events(run_id)
    leads = next_texts(events)
    return [
        (
            str(e.seq),
            e.type,
            e.node or "",
            summarize(e, leads.get(e.step) if e.type == "state_update" else None),
        )
        for e in events
    ]


def expected_where(store: Checkpointer, run_id: str) -> str:
    record = store.get_run(run_id)
    saved = store.checkpoint(run_id)
    return f"at {frontier_text(record.node, saved.tasks)} · step {record.step}/{record.max_steps}"


def shown_rows(view: Any) -> list[tuple[str, str, str, str]]:
    """Every row of the panel's (virtual) log, scrolled through from the top."""
    box = view.locator(".rv-log-rows")
    total = int(view.get_attribute("data-events"))
    seen: dict[int, tuple[str, str, str, str]] = {}
    box.evaluate("el => { el.scrollTop = 0; }")
    while True:
        view.page.wait_for_function(
            "el => el.dataset.logLoading !== 'true' && el.querySelector('.rv-log-row[data-seq]')",
            arg=view.element_handle(),
            timeout=15_000,
        )
        for row in view.locator(".rv-log-row").evaluate_all(ROWS):
            seen[int(row[0])] = tuple(row)
        if len(seen) >= total:
            return [seen[k] for k in sorted(seen)]
        moved = box.evaluate(
            "el => { const t = el.scrollTop; el.scrollTop += el.clientHeight - 18;"
            " return el.scrollTop !== t; }"
        )
        assert moved, f"the log shows {len(seen)} of {total} rows and scrolls no further"


def assert_run_panel_tells_the_store(view: Any, store: Checkpointer, run_id: str) -> None:
    """Header, every log row and the history pane at every step, against the store."""
    record = store.get_run(run_id)
    assert view.get_attribute("data-status") == str(record.status)
    assert view.locator(".rv-where").inner_text() == expected_where(store, run_id)
    expected = expected_rows(store, run_id)
    view.page.wait_for_function(
        "([el, n]) => el.dataset.events === String(n)",
        arg=[view.element_handle(), len(expected)],
        timeout=15_000,
    )
    assert shown_rows(view) == expected
    head = view.locator(".rv-state .rv-section-head")
    slider = view.locator(".rv-slider")
    move = "(el, v) => { el.value = String(v); el.dispatchEvent(new Event('input')); }"
    for saved in store.list_checkpoints(run_id):
        if saved.step == 0 or saved.step >= record.step:
            continue  # the slider's last step is the live run
        full = store.checkpoint(run_id, saved.step)
        slider.evaluate(move, saved.step)
        text = (
            f"State after step {saved.step} (read-only; "
            f"next: {frontier_text(full.node, full.tasks)})"
        )
        with contextlib.suppress(AssertionError):
            wait_for(lambda t=text: head.inner_text() == t, 15, text, page=view.page)
        assert head.inner_text() == text
    slider.evaluate(move, record.step)
    wait_for(lambda: head.inner_text() == "State", 15, "the live state", page=view.page)


# -- 06 ----------------------------------------------------------------------------------------


def test_06_the_superstep_panel_names_each_superstep_as_recorded(page: Any, lab: Lab) -> None:
    open_notebook(page, lab, "course/06-parallel-and-subgraphs.ipynb")
    view = run_widget(page, "predict, then click Step")
    run_id = view.get_attribute("data-run-id")
    where = view.locator(".rv-where")
    for step in range(1, 5):  # plan; papers + web; cite; write
        view.locator(".rv-step").click()
        wait_for(
            lambda s=step: f" · step {s}/" in where.inner_text(), 30, f"step {step}", page=page
        )
    with SqliteCheckpointer(lab.root / "course" / "runs" / "06-parallel.sqlite3") as store:
        arrows = [row[3].rpartition(" → ")[2] for row in expected_rows(store, run_id)
                  if row[1] == "state_update"]  # fmt: skip
        # What a teacher says of this run: after plan, papers and web together; papers
        # goes on to cite while web waits at the join; then write; then the end.
        assert arrows == ["papers + web", "cite", "cite", "write", "END"]
        assert_run_panel_tells_the_store(view, store, run_id)


# -- 07 ----------------------------------------------------------------------------------------


def test_07_the_statechart_panel_tells_the_recorded_history_and_microsteps(
    page: Any, lab: Lab
) -> None:
    name = "course/07-statecharts.ipynb"
    open_notebook(page, lab, name)
    view = page.locator(".agentnb-mv", has=page.locator(".mv-title", has_text="predict, then"))
    view.wait_for()
    view.scroll_into_view_if_needed()
    page.wait_for_function("el => el.dataset.drawn === 'true'", arg=view.element_handle())
    instance_id = lab.kernel_eval(name, "panel.id").strip("'")
    steps_head = view.locator(".mv-steps .mv-section-head")
    # Before any event: the start of the instance, not an event; no history yet.
    assert steps_head.inner_text().endswith(" of the instance's start")
    assert view.locator(".mv-history .mv-section-head").inner_text() == "History (0)"
    for seq, event in enumerate(["start", "defrost", "stop", "start"], start=1):
        view.get_by_role("button", name=event, exact=True).click()
        page.wait_for_function(
            "([el, n]) => el.dataset.seq === n && el.dataset.records === n",
            arg=[view.element_handle(), str(seq)],
            timeout=15_000,
        )
        with SqliteCheckpointer(lab.root / "course" / "runs" / "07-statecharts.sqlite3") as s:
            records = s.machines.history(instance_id)
            snapshot = s.machines.load(instance_id)
        assert snapshot is not None
        last = records[-1]
        assert (len(records), last.event) == (seq, event)
        assert view.locator(".mv-state").inner_text() == snapshot.state == last.target
        assert view.locator(".mv-where").inner_text().startswith(f"microwave · {seq} events · ")
        rows = view.locator(".mv-row").evaluate_all(
            "rows => rows.map(r => [r.dataset.seq, r.querySelector('.mv-ev').textContent,"
            " r.querySelector('.mv-move').textContent])"
        )
        assert rows == [
            [str(r.seq), r.event, f"ignored in {r.source}" if r.ignored else
             f"{r.source} → {r.target}"]
            for r in reversed(records)
        ]  # fmt: skip
        # The microsteps shown are those of this event: each on it, and together they exit
        # what the record's move left and enter what it reached.
        titles = view.locator(".mv-step-title").all_inner_texts()
        assert steps_head.inner_text() == f'Microsteps ({len(titles)}) of the last event, "{event}"'
        assert titles
        for n, t in enumerate(titles, start=1):
            assert t.startswith(f"microwave · microstep {n} on '{event}'")
        left = set(last.source.split()) - set(last.target.split())
        reached = set(last.target.split()) - set(last.source.split())
        exited = {s for t in titles for part in t.split(" · ") if part.startswith("exit ")
                  for s in part[5:].split(", ")}  # fmt: skip
        entered = {s for t in titles for part in t.split(" · ") if part.startswith("enter ")
                   for s in part[6:].split(", ")}  # fmt: skip
        assert left <= exited, (last, titles)
        assert reached <= entered, (last, titles)


# -- 08 ----------------------------------------------------------------------------------------


def select_cell(page: Any, index: int, *, extend: bool = False) -> None:
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").click(modifiers=["Shift"] if extend else [])


def run_command(page: Any, command: str) -> None:
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(f'li[data-command="{command}"]').click()


def wait_ran(page: Any, lab: Lab, name: str, last_index: int) -> None:
    """Until the code cell at ``last_index`` has run and the kernel is idle again."""
    prompt = page.locator(".jp-Notebook .jp-Cell").nth(last_index).locator(".jp-InputPrompt")
    wait_for(
        lambda: prompt.inner_text().strip() not in ("[ ]:", "[*]:", ""),
        120,
        f"cell {last_index} to run",
        page=page,
    )
    page.locator("#jp-main-statusbar").get_by_text("Python 3 (ipykernel) | Idle").wait_for(
        timeout=120_000
    )


def run_until(page: Any, lab: Lab, name: str, index: int) -> None:
    """Open ``name`` and run its cells up to ``index``, as a student running the cells
    above the one they read (the rest may close what the panel reads)."""
    page.goto(lab.page_url(name))
    status = page.locator("#jp-main-statusbar")
    status.get_by_text("Python 3 (ipykernel) | Idle").wait_for(timeout=60_000)
    select_cell(page, index + 1)
    run_command(page, "notebook:run-all-above")
    wait_ran(page, lab, name, index)


def test_08_the_panel_on_the_server_follows_a_decision_made_in_a_terminal(
    page: Any, lab: Lab
) -> None:
    import nbformat

    from agentnb import PostgresCheckpointer

    name = "course/08-scale-out.ipynb"
    cells = nbformat.read(lab.root / name, as_version=4).cells
    [panel_cell] = [i for i, c in enumerate(cells) if c.source.startswith("panel = ")]
    [approved_cell] = [i for i, c in enumerate(cells) if 'wait_for("refund-3 continued' in c.source]
    try:
        run_until(page, lab, name, panel_cell)  # refund-3 waits for a person
        view = run_widget(page, "refunds · run refund-3")
        with PostgresCheckpointer(lab.kernel_eval(name, "dsn").strip("'")) as store:
            assert str(store.get_run("refund-3").status) == "pending"
            assert_run_panel_tells_the_store(view, store, "refund-3")
            select_cell(page, panel_cell + 1)  # the CLI approves; a worker continues
            select_cell(page, approved_cell, extend=True)
            run_command(page, "notebook:run-cell")
            wait_ran(page, lab, name, approved_cell)
            page.wait_for_function(
                "el => el.dataset.status === 'completed'", arg=view.element_handle()
            )
            assert_run_panel_tells_the_store(view, store, "refund-3")
            assert "approved by teacher" in view.locator(".rv-decided").inner_text()
        select_cell(page, approved_cell + 1)  # stop the workers, remove the server
        run_command(page, "notebook:run-all-below")
        wait_ran(page, lab, name, len(cells) - 2)
        assert lab.kernel_eval(name, "sum(p.poll() is None for p in started)") == "0"
    finally:  # whatever failed above, no worker or server outlives the test
        with contextlib.suppress(Exception):
            lab.kernel_exec(
                name,
                "for p in globals().get('started', []):\n"
                "    p.poll() is None and p.kill()\n"
                "globals().get('server') and server.root.exists() and server.remove()",
            )


# -- 09 ----------------------------------------------------------------------------------------


def test_09_the_agent_loop_panel_tells_the_recorded_conversation(page: Any, lab: Lab) -> None:
    import nbformat

    name = "course/09-agent-loop.ipynb"
    cells = nbformat.read(lab.root / name, as_version=4).cells
    [panel_cell] = [i for i, c in enumerate(cells) if c.source.startswith("run.view(")]
    run_until(page, lab, name, panel_cell)  # the notebook's last cell closes the store
    view = run_widget(page, "the sofa refund")
    assert view.get_attribute("data-run-id") == "sofa"
    with SqliteCheckpointer(lab.root / "course" / "runs" / "09-agent.sqlite3") as store:
        rows = expected_rows(store, "sofa")
        assert ("interrupted", "refund_tool", "awaiting approval before refund_tool") in [
            r[1:] for r in rows
        ]
        assert_run_panel_tells_the_store(view, store, "sofa")
