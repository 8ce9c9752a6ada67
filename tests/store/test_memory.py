"""MemoryCheckpointer details the shared contract does not reach."""

from __future__ import annotations

import dataclasses
import time

from agentnb import MemoryCheckpointer
from agentnb.store.base import CheckpointWrite, StepCommit
from agentnb.store.records import Event, RunRecord, Status


def test_a_step_commit_keeps_every_run_field_it_does_not_change() -> None:
    # commit() builds the new record field by field (faster than dataclasses.replace): a
    # field added to RunRecord and left out there would silently fall back to its default.
    now = time.time()
    run = RunRecord(
        run_id="r",
        graph="g",
        shape="s",
        status=Status.RUNNING,
        node="a",
        step=0,
        seq=1,
        max_steps=9,
        created_at=now,
        updated_at=now,
    )
    store = MemoryCheckpointer()
    store.create_run(
        run, CheckpointWrite(0, "a", "{}"), [Event("r", 1, 0, "started", "a", {}, now)]
    )
    held = store.acquire("r", "me")
    # Every field the step does not set gets a value of its own, unlike any default.
    kept = {
        f.name: getattr(held, f.name)
        for f in dataclasses.fields(RunRecord)
        if f.name not in {"status", "node", "step", "seq", "updated_at", "error", "lease_expires"}
    }
    kept |= {"pending_digest": None, "decided_by": "ann", "decided_at": now - 1.0}
    store._runs["r"] = dataclasses.replace(held, **kept)
    events = [Event("r", 2, 1, "state_update", "a", {"delta": {}}, now)]
    store.commit("r", held.fence, StepCommit(Status.RUNNING, "b", 1, events), lease_seconds=30)
    after = store.get_run("r")
    assert {name: getattr(after, name) for name in kept} == kept
    assert (after.status, after.node, after.step, after.seq) == (Status.RUNNING, "b", 1, 2)
