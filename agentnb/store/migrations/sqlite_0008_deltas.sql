-- agentnb SQLite schema: checkpoints as deltas plus snapshots (agentnb.store.history).

-- What an entry's state holds: 'snapshot' (the whole state) or 'delta' (what changed since
-- the run's checkpoint of the step before, agentnb.store.deltas). NULL is a snapshot: an
-- entry saved by a decision's edit, or one this migration's Python step left whole.
ALTER TABLE entries ADD COLUMN kind TEXT;

-- Loading a step walks this index back to the nearest snapshot without reading a state,
-- then reads only the bodies of that chain (at most one snapshot and K deltas).
CREATE INDEX IF NOT EXISTS entries_chain ON entries (run_id, step, seq, kind)
WHERE state IS NOT NULL;
