-- agentnb SQLite schema, version 1.
-- Times are epoch seconds (REAL). JSON columns hold compact UTF-8 JSON text.

CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    graph           TEXT NOT NULL,
    shape           TEXT NOT NULL,
    status          TEXT NOT NULL,
    node            TEXT NOT NULL,
    step            INTEGER NOT NULL,
    seq             INTEGER NOT NULL,
    max_steps       INTEGER NOT NULL,
    created_at      REAL NOT NULL,
    updated_at      REAL NOT NULL,
    error           TEXT,
    pending_digest  TEXT,
    decided_by      TEXT,
    decided_at      REAL,
    lease_owner     TEXT,
    lease_expires   REAL,
    fence           INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE INDEX runs_by_status ON runs (status, created_at);

CREATE TABLE checkpoints (
    run_id  TEXT NOT NULL,
    step    INTEGER NOT NULL,
    node    TEXT NOT NULL,
    state   TEXT NOT NULL,
    at      REAL NOT NULL,
    PRIMARY KEY (run_id, step)
) WITHOUT ROWID;

CREATE TABLE events (
    run_id   TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    step     INTEGER NOT NULL,
    type     TEXT NOT NULL,
    node     TEXT,
    payload  TEXT NOT NULL,
    at       REAL NOT NULL,
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
