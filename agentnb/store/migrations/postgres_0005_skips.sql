-- agentnb PostgreSQL schema, version 5: skip rows cut a run's checkpoint chain
-- (agentnb.store.chains), as SQLite's version 11.

-- An entry's kind may now also be 'skip': its state is a delta from the run's previous
-- anchor (the latest snapshot or skip at a step before it), not from the step before.
-- Loading a step walks fewer than 100 deltas back to an anchor (entries_chain), then the
-- anchors back to a snapshot through this index of the anchors alone. Existing chains
-- (deltas and snapshots only) read back as they are: no row needs converting, and the
-- next checkpoint a writer stores after opening starts a new chain with a snapshot.
CREATE INDEX entries_anchors ON entries (run_id, step, seq, kind)
WHERE state IS NOT NULL AND (kind IS NULL OR kind <> 'delta');
