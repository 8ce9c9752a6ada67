-- agentnb PostgreSQL schema, version 2: checkpoints as deltas plus snapshots
-- (agentnb.store.history), as SQLite's version 8.

-- What an entry's state holds: 'snapshot' (the whole state) or 'delta' (what changed since
-- the run's checkpoint of the step before, agentnb.store.deltas). NULL is a snapshot: an
-- entry saved by a decision's edit, or one written before this version (kept whole: they
-- read back as they are, so no row needs converting).
ALTER TABLE entries ADD COLUMN kind text;

-- Loading a step walks this index back to the nearest snapshot without reading a state,
-- then reads only the bodies of that chain (at most one snapshot and K deltas).
CREATE INDEX entries_chain ON entries (run_id, step, seq, kind) WHERE state IS NOT NULL;
