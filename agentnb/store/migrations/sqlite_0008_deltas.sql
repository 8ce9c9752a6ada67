-- agentnb SQLite schema: checkpoints as deltas plus snapshots (agentnb.store.history).

-- What an entry's state holds: 'snapshot' (the whole state) or 'delta' (what changed since
-- the run's checkpoint of the step before, agentnb.store.deltas). NULL is a snapshot: an
-- entry saved by a decision's edit, or one this migration's Python step left whole.
ALTER TABLE entries ADD COLUMN kind TEXT;

-- One index over the checkpoints, covering what listing a history and walking a chain
-- read: listing scans it without reading a state, and loading a step walks it back to
-- the nearest snapshot, then reads only that chain's bodies. It replaces 0007's two
-- indexes (entries_by_step over every entry, entries_without_state to tell the
-- decisions' entries apart), so a step writes one index page instead of two.
CREATE INDEX IF NOT EXISTS entries_chain ON entries (run_id, step, seq, kind, node, at)
WHERE state IS NOT NULL;
DROP INDEX IF EXISTS entries_by_step;
DROP INDEX IF EXISTS entries_without_state;
