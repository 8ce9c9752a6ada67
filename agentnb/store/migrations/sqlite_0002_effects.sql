-- agentnb SQLite schema, version 2: the side-effect ledger behind ctx.once().
-- One row per effect key (run:step:node:name); the first recorded result wins, so a step
-- re-executed after a crash gets the recorded result instead of repeating the effect.
CREATE TABLE effects (
    key     TEXT PRIMARY KEY,
    run_id  TEXT NOT NULL,
    step    INTEGER NOT NULL,
    node    TEXT NOT NULL,
    name    TEXT NOT NULL,
    result  TEXT NOT NULL,
    at      REAL NOT NULL
) WITHOUT ROWID;

CREATE INDEX effects_by_run ON effects (run_id, at);
