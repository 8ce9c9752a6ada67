-- agentnb SQLite schema, version 4: who may decide, and who did.
-- Each decision (accepted or refused) records the identity the deciding process vouched
-- for, as JSON {name, groups, source}, beside the free-text approver name.
ALTER TABLE decisions ADD COLUMN identity TEXT;

-- What a run's decisions are checked against, stored when the run starts: the identity
-- that started it (for separation of duties) and each interrupt's approver policy, keyed
-- "before:NODE" / "after:NODE". Runs from older versions have no row: no policy.
CREATE TABLE run_policies (
    run_id      TEXT PRIMARY KEY,
    started_by  TEXT,           -- JSON identity
    interrupts  TEXT NOT NULL   -- JSON {key: {approvers, check, separate_duties}}
) WITHOUT ROWID;
