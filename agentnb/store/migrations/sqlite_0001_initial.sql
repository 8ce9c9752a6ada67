-- agentnb SQLite schema, version 1.
-- Times are epoch seconds (REAL). JSON columns hold compact UTF-8 JSON text.

-- One row per run: what only changes at a status change, a decision or a lease.
-- Where the run stands (node, step, last event) is its latest journal entry.
CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    graph           TEXT NOT NULL,
    shape           TEXT NOT NULL,
    status          TEXT NOT NULL,
    max_steps       INTEGER NOT NULL,
    created_at      REAL NOT NULL,
    status_at       REAL NOT NULL,
    error           TEXT,
    pending_digest  TEXT,
    decided_by      TEXT,
    decided_at      REAL,
    lease_owner     TEXT,
    lease_expires   REAL,
    fence           INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE INDEX runs_by_status ON runs (status, created_at);

-- The journal: every write to a run appends one entry carrying its events (a JSON array
-- of [seq, step, type, node, payload, at]) and, for a step, the checkpoint (state after
-- `step` nodes, `node` next). One row per step keeps a durable step to one page write.
CREATE TABLE entries (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,   -- seq of the entry's last event
    step    INTEGER NOT NULL,
    node    TEXT NOT NULL,
    state   TEXT,               -- NULL when the entry saves no checkpoint
    events  TEXT NOT NULL,
    at      REAL NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- Append-only audit of decisions, refused attempts included.
CREATE TABLE decisions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id          TEXT NOT NULL,
    node            TEXT,
    step            INTEGER,
    decision        TEXT NOT NULL,
    approver        TEXT NOT NULL,
    comment         TEXT,
    digest_shown    TEXT,
    pending_digest  TEXT,
    accepted        INTEGER NOT NULL,
    reason          TEXT,
    at              REAL NOT NULL
);

CREATE INDEX decisions_by_run ON decisions (run_id, id);

CREATE TRIGGER decisions_append_only_update BEFORE UPDATE ON decisions
BEGIN SELECT RAISE(ABORT, 'the decision audit is append-only'); END;
CREATE TRIGGER decisions_append_only_delete BEFORE DELETE ON decisions
BEGIN SELECT RAISE(ABORT, 'the decision audit is append-only'); END;
