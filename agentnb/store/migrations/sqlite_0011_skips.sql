-- agentnb SQLite schema: skip rows cut a run's checkpoint chain (agentnb.store.chains).

-- Every checkpoint has a kind: 'snapshot' (the whole state), 'delta' (what changed since
-- the step before) or, new, 'skip' (what changed since the run's previous anchor: the
-- latest snapshot or skip at a step before it). A NULL kind is now an entry without a
-- checkpoint (a decision's, a held task's): the indexes below are partial on the kind
-- alone, so a walk of them never looks the entry itself up — in this WITHOUT ROWID table
-- a lookup that lands on a big state reads all of it, the snapshot's megabytes for a
-- one-row answer.
UPDATE entries SET kind = 'snapshot' WHERE kind IS NULL AND state IS NOT NULL;

-- Every checkpoint, covering what listing a history and walking deltas back to an anchor
-- read (0008's index, then partial on state IS NOT NULL).
DROP INDEX IF EXISTS entries_chain;
CREATE INDEX entries_chain ON entries (run_id, step, seq, kind, node, at)
WHERE kind IS NOT NULL;

-- The anchors alone: loading a step walks fewer than 100 deltas back to an anchor
-- (entries_chain), then the anchors back to a snapshot through this index, about
-- 2 * sqrt(step) rows instead of every step since a snapshot. The migration's Python step
-- (agentnb.store.sqlite_checkpoints.convert) cuts the existing chains the same way.
CREATE INDEX entries_anchors ON entries (run_id, step, seq, kind)
WHERE kind <> 'delta';
