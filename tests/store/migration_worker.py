"""Opens a SQLite file that needs migrating and stops inside the migration's transaction,
after 0012's SQL (the journal copied, the old table dropped, the new one renamed) and
before its COMMIT: prints ``rebuilt`` and waits on stdin, for the test to SIGKILL it.

Usage: python migration_worker.py PATH
"""

from __future__ import annotations

import sqlite3
import sys

from agentnb import SqliteCheckpointer
from agentnb.store import migrate


def hold(db: sqlite3.Connection) -> None:
    (rows,) = db.execute("SELECT count(*) FROM entries").fetchone()
    print("rebuilt", rows, flush=True)
    sys.stdin.readline()  # the test kills this process here


def main(path: str) -> None:
    migrate.STEPS["sqlite_0012_entries_order.sql"] = hold
    SqliteCheckpointer(path).close()


if __name__ == "__main__":
    main(sys.argv[1])
