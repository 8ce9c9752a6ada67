-- agentnb SQLite schema: claims — workers take runnable runs in one statement.
-- (Numbered 0009: 0008 lands from another branch; the list order in migrate.py is what counts.)

-- Free runs waiting for a worker (queued by workflow.submit or put back by a stopping
-- worker; approved or answered by a person), oldest first: what a claim reads first.
CREATE INDEX IF NOT EXISTS runs_waiting ON runs (status_at)
WHERE lease_owner IS NULL AND status IN ('queued', 'approved');

-- Held runs by lease expiry: a claim finds the runs whose worker is gone without a scan.
CREATE INDEX IF NOT EXISTS runs_by_lease ON runs (lease_expires) WHERE lease_owner IS NOT NULL;

-- A state-machine instance with a due timer is leased to the worker firing it, so the
-- others skip it (a firing is exactly-once anyway: its event id is unique per instance,
-- and a step based on a stale read is refused by seq). The lease goes with the instance.
CREATE TABLE IF NOT EXISTS machine_leases (
    instance_id  TEXT PRIMARY KEY,
    owner        TEXT NOT NULL,
    expires      REAL NOT NULL
) WITHOUT ROWID;
