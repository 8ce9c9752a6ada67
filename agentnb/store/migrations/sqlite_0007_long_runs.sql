-- agentnb SQLite schema: long runs — retention, and a history that lists without decoding.

-- The decision audit is append-only: a row is never changed (decisions_append_only_update
-- stays), and it is deleted only once its run has been deleted, by a retention that asked
-- for it (prune / delete_run with include_audit). The audit of an existing run cannot be
-- thinned by any code path.
DROP TRIGGER IF EXISTS decisions_append_only_delete;
CREATE TRIGGER IF NOT EXISTS decisions_kept_while_their_run_exists BEFORE DELETE ON decisions
WHEN EXISTS (SELECT 1 FROM runs WHERE run_id = OLD.run_id)
BEGIN SELECT RAISE(ABORT, 'the decision audit of an existing run is append-only'); END;

-- Where each checkpoint is, without reading the journal's states: listing a run's history
-- scans entries_by_step only (it covers step, node, at and seq), and the few entries that
-- carry no checkpoint (a decision's) are told apart through entries_without_state.
-- Loading one checkpoint is a lookup here and one read of its entry. (Indexes, not a
-- table kept by triggers: a trigger copies the whole new row, state included, per step.)
CREATE INDEX IF NOT EXISTS entries_by_step ON entries (run_id, step, node, at);
CREATE INDEX IF NOT EXISTS entries_without_state ON entries (run_id) WHERE state IS NULL;
