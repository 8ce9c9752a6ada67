-- agentnb SQLite schema: claims — workers take runnable runs in one statement.
-- (Numbered 0009: 0008 lands from another branch; the list order in migrate.py is what counts.)

-- Free runs waiting for a worker (queued by workflow.submit or put back by a stopping
-- worker; approved or answered by a person), oldest first: what a claim reads first.
CREATE INDEX IF NOT EXISTS runs_waiting ON runs (status_at)
WHERE lease_owner IS NULL AND status IN ('queued', 'approved');

-- Held runs by lease expiry: a claim finds the runs whose worker is gone without a scan.
CREATE INDEX IF NOT EXISTS runs_by_lease ON runs (lease_expires) WHERE lease_owner IS NOT NULL;
