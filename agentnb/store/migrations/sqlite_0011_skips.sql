-- agentnb SQLite schema: skip rows cut a run's checkpoint chain (agentnb.store.chains).

-- An entry's kind may now also be 'skip': its state is a delta from the run's previous
-- anchor (the latest snapshot or skip at a step before it), not from the step before.
-- Loading a step walks fewer than 100 deltas back to an anchor (entries_chain), then the
-- anchors back to a snapshot through this index of the anchors alone, so it reads about
-- 2 * sqrt(step) rows instead of every step since a snapshot. The migration's Python step
-- (agentnb.store.sqlite_checkpoints.convert) cuts the existing chains the same way.
CREATE INDEX IF NOT EXISTS entries_anchors ON entries (run_id, step, seq, kind)
WHERE state IS NOT NULL AND (kind IS NULL OR kind <> 'delta');
