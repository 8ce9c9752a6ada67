-- agentnb PostgreSQL schema, version 2: checkpoints as deltas plus snapshots
-- (agentnb.store.history), as SQLite's version 8.

-- What an entry's state holds: 'snapshot' (the whole state) or 'delta' (what changed since
-- the run's checkpoint of the step before, agentnb.store.deltas). NULL is a snapshot: an
-- entry saved by a decision's edit, or one written before this version (kept whole: they
-- read back as they are, so no row needs converting).
ALTER TABLE entries ADD COLUMN kind text;

-- One index over the checkpoints, covering what listing a history and walking a chain
-- read (an index-only scan once the visibility map is set), replacing version 1's two:
-- a step updates one index besides the primary key instead of two.
CREATE INDEX entries_chain ON entries (run_id, step, seq, kind, node, at)
WHERE state IS NOT NULL;
DROP INDEX entries_by_step;
DROP INDEX entries_without_state;
