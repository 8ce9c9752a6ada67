"""Approve the held tasks of parallel runs from a separate process (test_branch_approvals).

python approval_worker.py DB GO ME IDS   once the GO file exists, try to approve every
                                         (run, task) pair listed in the IDS file once
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from agentnb import ApprovalNotPending, SqliteCheckpointer


def main(db: str, go: str, me: str, ids: str) -> None:
    pairs = json.loads(Path(ids).read_text())
    random.shuffle(pairs)
    with SqliteCheckpointer(db) as store:
        print("ready", flush=True)
        while not Path(go).exists():  # all workers start deciding at the same moment
            time.sleep(0.001)
        won = []
        for run_id, task in pairs:
            try:
                store.decide(run_id, "approved", f"worker-{me}", task=task)
                won.append([run_id, task])
            except ApprovalNotPending:
                pass
    print(json.dumps(won), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
