"""Answer questions through the ``agentnb respond`` command, racing other processes.

python respond_worker.py DB GO ME IDS   once the GO file exists, answer every run listed
                                        in IDS once with the value ME; print, per run,
                                        the command's exit code and what it wrote to stderr
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import sys
import time
from pathlib import Path

from agentnb.cli import main


def run(db: str, go: str, me: str, ids: str) -> None:
    run_ids = json.loads(Path(ids).read_text())
    random.shuffle(run_ids)
    print("ready", flush=True)
    while not Path(go).exists():  # every process starts answering at the same moment
        time.sleep(0.001)
    outcomes = {}
    for run_id in run_ids:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(
                ["respond", run_id, "--db", db, "--value", me, "--by", f"worker-{me}"],
                out=io.StringIO(),
            )
        outcomes[run_id] = [code, err.getvalue()]
    print(json.dumps(outcomes), flush=True)


if __name__ == "__main__":
    run(*sys.argv[1:])
