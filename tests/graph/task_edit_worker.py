"""Approve one held task of a parallel run, with an edit, from a separate process.

python task_edit_worker.py DB GO TASK   once the GO file exists, approve TASK of every run
                                        in the database with the edit {"notes": [TASK]}
                                        and print the runs it approved
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from agentnb import ApprovalNotPending, SqliteCheckpointer
from tests.graph.test_task_edits import review


def main(db: str, go: str, task: str) -> None:
    with SqliteCheckpointer(db) as store:
        wf = review(store)
        runs = [r.run_id for r in wf.runs()]
        print("ready", flush=True)
        while not Path(go).exists():  # both deciders start at the same moment
            time.sleep(0.001)
        won = []
        for run_id in runs:
            edit = {"notes": [f"{task} checked"], f"{task}_limit": 10}
            try:
                wf.attach(run_id).approve(by=f"approver-{task}", task=task, update=edit)
                won.append(run_id)
            except ApprovalNotPending:
                pass
    print(json.dumps(won), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
