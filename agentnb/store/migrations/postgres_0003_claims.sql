-- agentnb PostgreSQL schema, version 3: claims, as SQLite's version 9 — workers take
-- runnable runs in one statement (FOR UPDATE SKIP LOCKED: agentnb.store.postgres).

-- Free runs waiting for a worker (queued, or approved/answered by a person), oldest first.
CREATE INDEX runs_waiting ON runs (status_at)
WHERE lease_owner IS NULL AND status IN ('queued', 'approved');

-- Held runs by lease expiry: a claim finds the runs whose worker is gone without a scan.
CREATE INDEX runs_by_lease ON runs (lease_expires) WHERE lease_owner IS NOT NULL;

-- A state-machine instance with a due timer is leased to the worker firing it.
CREATE TABLE machine_leases (
    instance_id  text PRIMARY KEY,
    owner        text NOT NULL,
    expires      double precision NOT NULL
);
