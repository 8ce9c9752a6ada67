-- agentnb SQLite schema, version 3: state-machine instances and their event records.
-- The instance row holds where it stands; each processed event is one record, saved in
-- the same transaction as the row. (instance_id, event_id) is unique: a repeated event id
-- is answered from its record and changes nothing.
CREATE TABLE machine_instances (
    instance_id  TEXT PRIMARY KEY,
    machine      TEXT NOT NULL,
    state        TEXT NOT NULL,
    context      TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
) WITHOUT ROWID;

CREATE TABLE machine_events (
    instance_id  TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    event        TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    source       TEXT NOT NULL,
    target       TEXT NOT NULL,
    payload      TEXT NOT NULL,
    delta        TEXT NOT NULL,
    at           REAL NOT NULL,
    ignored      INTEGER NOT NULL,
    reason       TEXT,
    transition   INTEGER,          -- index of the declared transition that fired
    PRIMARY KEY (instance_id, seq),
    UNIQUE (instance_id, event_id)
) WITHOUT ROWID;
