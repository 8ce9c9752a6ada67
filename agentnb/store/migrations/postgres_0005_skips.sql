-- agentnb PostgreSQL schema, version 5: skip rows cut a run's checkpoint chain
-- (agentnb.store.chains), as SQLite's version 11.

-- Every checkpoint has a kind: 'snapshot', 'delta' or, new, 'skip' (what changed since the
-- run's previous anchor: the latest snapshot or skip at a step before it). A NULL kind is
-- now an entry without a checkpoint, so the indexes are partial on the kind alone (the
-- queries are SQLite's, where that keeps an index walk from looking entries up).
UPDATE entries SET kind = 'snapshot' WHERE kind IS NULL AND state IS NOT NULL;

DROP INDEX entries_chain;
CREATE INDEX entries_chain ON entries (run_id, step, seq, kind, node, at)
WHERE kind IS NOT NULL;

-- The anchors alone: loading a step walks fewer than 100 deltas back to an anchor
-- (entries_chain), then the anchors back to a snapshot through this index. Existing chains
-- (deltas and snapshots only) read back as they are: no row needs converting, and the
-- next checkpoint a writer stores after opening starts a new chain with a snapshot.
CREATE INDEX entries_anchors ON entries (run_id, step, seq, kind)
WHERE kind <> 'delta';
