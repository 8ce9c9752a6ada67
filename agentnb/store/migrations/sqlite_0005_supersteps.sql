-- agentnb SQLite schema: supersteps (parallel branches).
-- An entry's checkpoint may name more than one next task: `tasks` holds that frontier as
-- JSON (the nodes triggered, the Sends, the joins' arrivals); NULL for a linear run.
ALTER TABLE entries ADD COLUMN tasks TEXT;

-- The result of each finished task of a superstep not yet committed, saved the moment the
-- task ends: a worker resuming the superstep after a crash runs only the tasks missing
-- here. `step` is the superstep's starting checkpoint; the commit that merges the
-- superstep deletes its rows.
CREATE TABLE pending_writes (
    run_id   TEXT NOT NULL,
    step     INTEGER NOT NULL,
    task_id  TEXT NOT NULL,
    node     TEXT NOT NULL,
    delta    TEXT NOT NULL,
    events   TEXT NOT NULL,
    at       REAL NOT NULL,
    PRIMARY KEY (run_id, step, task_id)
) WITHOUT ROWID;

-- Approvals a superstep waits for, one per task held by an interrupt: several can be
-- pending at once, and each is decided exactly once by a conditional update of its row.
CREATE TABLE pending_tasks (
    run_id      TEXT NOT NULL,
    step        INTEGER NOT NULL,
    task_id     TEXT NOT NULL,
    node        TEXT NOT NULL,
    digest      TEXT NOT NULL,
    status      TEXT NOT NULL,    -- pending | approved | rejected
    decided_by  TEXT,
    decided_at  REAL,
    PRIMARY KEY (run_id, step, task_id)
) WITHOUT ROWID;

-- What an accepted approval carried besides its yes: the edited keys and the digest of the
-- state approved, or the answer to a node's question. Kept beside the append-only audit.
CREATE TABLE decision_edits (
    decision_id  INTEGER PRIMARY KEY,
    edit         TEXT NOT NULL
);
CREATE TRIGGER decision_edits_append_only_update BEFORE UPDATE ON decision_edits
BEGIN SELECT RAISE(ABORT, 'the decision audit is append-only'); END;
CREATE TRIGGER decision_edits_append_only_delete BEFORE DELETE ON decision_edits
BEGIN SELECT RAISE(ABORT, 'the decision audit is append-only'); END;
