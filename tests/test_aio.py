"""Sync calls return values — never coroutines — in a script, in pytest, inside a running
event loop, and inside a live Jupyter kernel (where Ctrl-C/interrupt cancels the run)."""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentnb import Status
from agentnb._aio import run_sync
from agentnb.examples import build_refund_workflow

ROOT = Path(__file__).parents[1]

SCENARIO = textwrap.dedent(
    """
    from agentnb.examples import build_refund_workflow
    refunds = []
    wf = build_refund_workflow(None, refunds)
    run = wf.start({"requested": 800})
    first = run.step()
    assert type(first).__name__ == "StepResult", first
    assert run.step().node is None and run.status == "pending"
    run.approve(by="ada")
    assert run.run() is run and run.status == "completed", run
    events = list(wf.stream({"requested": 10}))
    assert events[-1].type == "completed"
    print("ok", refunds)
    """
)


def test_sync_calls_work_in_a_plain_script(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCENARIO)
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok [800, 10]"


def test_sync_calls_work_in_pytest() -> None:
    namespace: dict[str, Any] = {}
    exec(SCENARIO, namespace)
    assert namespace["refunds"] == [800, 10]


def test_sync_calls_work_inside_a_running_event_loop() -> None:
    async def inside_loop() -> list[int]:
        namespace: dict[str, Any] = {}
        exec(SCENARIO, namespace)  # sync API called from async code, as in a kernel
        return namespace["refunds"]  # type: ignore[no-any-return]

    assert asyncio.run(inside_loop()) == [800, 10]


def test_a_sync_node_may_call_the_sync_api_itself() -> None:
    inner = build_refund_workflow()

    def outer_node(state: dict[str, Any]) -> dict[str, Any]:
        run = inner.start({"requested": 1})
        return {"inner": run.run().status.value}

    from agentnb import StateGraph

    async def scenario() -> dict[str, Any]:
        g = StateGraph("outer").add_node("outer", outer_node).set_entry_point("outer")
        run = g.compile().start()
        run.run()  # sync, from inside a loop: the node runs on the background loop
        return run.state

    assert asyncio.run(scenario()) == {"inner": "completed"}


def test_run_sync_propagates_exceptions() -> None:
    async def fail() -> None:
        raise LookupError("x")

    with pytest.raises(LookupError):
        run_sync(fail())


def interrupted_inside_a_running_loop(call: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``run_sync(call())`` from inside a running loop, as a kernel's cell makes it; the
    call interrupts the main thread, so the sync call must end in KeyboardInterrupt."""

    async def inside_loop() -> None:
        run_sync(call())

    # A kernel runs a cell with Python's own SIGINT handler (ipykernel sets it); a test
    # process may have inherited SIGINT ignored (a shell's background job does), where no
    # interrupt would ever arrive.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    loop = asyncio.new_event_loop()  # not asyncio.run: its own SIGINT handler stays out
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(inside_loop())
    finally:
        loop.close()
        signal.signal(signal.SIGINT, previous)


def test_an_interrupt_returns_only_once_the_cancelled_call_has_cleaned_up() -> None:
    # A kernel's interrupt, as a sync call inside a running loop sees it: SIGINT to the
    # main thread while the call runs on the background loop. KeyboardInterrupt must come
    # back only after the call's own cancellation handling ran (where a run records itself
    # ``cancelled``): the cell after an interrupt reads the run's status.
    import threading

    cleaned: list[str] = []

    async def interrupted_call() -> None:
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        try:
            await asyncio.sleep(30)  # a lost interrupt ends the call uncancelled: a failure
        except asyncio.CancelledError:
            for _ in range(100):  # cleanup that takes many turns of the loop
                await asyncio.sleep(0)
            cleaned.append("recorded")
            raise

    interrupted_inside_a_running_loop(interrupted_call)
    assert cleaned == ["recorded"]


def test_an_interrupt_due_when_the_sync_call_begins_to_wait_still_cancels_it() -> None:
    # SIGINT's handler is due but the main thread is not yet blocked when it lands: CPython
    # breaks a lock wait only for a signal that arrives during it, so the wait must look
    # for a due interrupt itself. interrupt_main() makes the handler due without the
    # signal, as a SIGINT landing just before the wait does; the call would end after 30 s.
    import _thread

    cleaned: list[str] = []

    async def interrupted_call() -> None:
        _thread.interrupt_main()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cleaned.append("recorded")
            raise

    interrupted_inside_a_running_loop(interrupted_call)
    assert cleaned == ["recorded"]


# -- a real kernel ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    from tests.kernels import start_kernel

    km, kc = start_kernel(cwd=str(ROOT))
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc: Any, code: str, timeout: float = 60) -> tuple[dict[str, Any], str]:
    chunks: list[str] = []

    def collect(msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "stream":
            chunks.append(content["text"])
        elif msg["msg_type"] in ("execute_result", "display_data"):
            chunks.append(content["data"].get("text/plain", ""))
        elif msg["msg_type"] == "error":
            chunks.append(f"{content['ename']}: {content['evalue']}")

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=collect)
    return reply["content"], "".join(chunks)


def is_idle(msg: dict[str, Any]) -> bool:
    return bool(msg["content"].get("execution_state") == "idle")


def iopub_until(
    kc: Any, msg_id: str, wanted: Callable[[dict[str, Any]], bool], timeout: float = 60
) -> dict[str, Any]:
    """The first IOPub message of request ``msg_id`` that is ``wanted``; fail if none comes."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg: dict[str, Any] = kc.get_iopub_msg(timeout=left)
        except queue.Empty:
            break
        if msg["parent_header"].get("msg_id") == msg_id and wanted(msg):
            return msg
    raise AssertionError(f"no such IOPub message for {msg_id} within {timeout} s")


@pytest.mark.slow
def test_sync_calls_work_inside_a_jupyter_kernel(kernel: Any) -> None:
    _, kc = kernel
    reply, out = execute(kc, SCENARIO)
    assert reply["status"] == "ok", out
    assert "ok [800, 10]" in out
    # The kernel's loop is running during execution: a step returns a value, not a coroutine.
    reply, out = execute(
        kc,
        "import asyncio; asyncio.get_running_loop(); r = wf.start({'requested': 900}); r.step()",
    )
    assert reply["status"] == "ok", out
    assert "ran 'planner'" in out
    assert "[pending]" in out


@pytest.mark.slow
def test_interrupting_the_kernel_cancels_the_run(kernel: Any, tmp_path: Path) -> None:
    km, kc = kernel
    db = tmp_path / "k.sqlite3"
    setup = textwrap.dedent(
        f"""
        import asyncio
        from agentnb import SqliteCheckpointer, StateGraph
        async def slow(state):
            print("slow started", flush=True)
            await asyncio.sleep(600)
        store = SqliteCheckpointer({str(db)!r})
        g = StateGraph("slow").add_node("first", lambda s: {{"x": 1}}).add_node("slow", slow)
        wf = g.set_entry_point("first").add_edge("first", "slow").compile(store)
        run = wf.start({{}})
        """
    )
    reply, out = execute(kc, setup)
    assert reply["status"] == "ok", out
    msg_id = kc.execute("run.run()")
    # Interrupt only once the node runs: before that the signal would hit other code.
    started = lambda m: m["msg_type"] == "stream" and "slow started" in m["content"]["text"]  # noqa: E731
    iopub_until(kc, msg_id, started)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    # After an error the kernel aborts the execute requests queued behind it (stop_on_error),
    # and it decides what was queued only after sending the error reply: a request sent on
    # that reply alone can be answered 'aborted'. The kernel is done with a request once it
    # says idle for it; only then send the next one.
    iopub_until(kc, msg_id, lambda m: m["msg_type"] == "status" and is_idle(m))
    reply, out = execute(kc, "print(run.status.value, run.node, run.state, run.events[-1].type)")
    assert reply["status"] == "ok", out
    assert out.split() == ["cancelled", "slow", "{'x':", "1}", "cancelled"]
    from agentnb import SqliteCheckpointer

    with SqliteCheckpointer(db) as store:
        assert store.list_runs()[0].status == Status.CANCELLED
