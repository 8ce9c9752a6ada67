-- agentnb SQLite schema: the journal's small columns first, its bodies last.

-- entries is a WITHOUT ROWID table: a row is one record in the primary key's B-tree, and
-- a record bigger than about 1 KB keeps its first bytes in the leaf and the rest in a
-- chain of overflow pages. SQLite reads a column by reading the record up to that
-- column's end, so a column after a snapshot's state costs the snapshot's whole overflow
-- chain. Until now `at`, `tasks` and `kind` came after `state` (ALTER TABLE appends), and
-- listing a history or walking a chain read them through entries_chain, a covering
-- index that every checkpoint row wrote a second B-tree page for.
--
-- The rebuilt table puts what every walk and listing reads first (step, kind, node, at:
-- a few dozen bytes, always in the leaf), then the bodies, smallest and most read alone
-- first:
--   tasks   NULL for a linear run; read with node and at when one checkpoint is loaded;
--   events  what the event log reads (a few hundred bytes a step), before the state so
--           that reading a snapshot's events never walks the state's overflow chain;
--   state   the checkpoint's body, megabytes for a snapshot of a long run: last.
-- A walk or listing now reads the primary key, each row up to its small columns, so
-- entries_chain goes and a step writes one B-tree page instead of two (bench_sql_step:
-- 21.3 -> 16.1 us, the floor 16.8). A row's key is still the whole record: a seek or a
-- range's end compared with a big row reads all of it, so the listing is one seek with no
-- end of range (agentnb.store.sql_checkpoints). entries_anchors stays: loading a step
-- walks the anchors back to a snapshot, about sqrt(step) rows among thousands.
--
-- Every row is copied as it is (same values, same types: an INSERT ... SELECT moves the
-- values, never their text); no trigger or view names entries. The old table's pages
-- go to the free list and are reused by later writes (a prune gives them back to the
-- file system).
CREATE TABLE entries_0012 (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,   -- seq of the entry's last event
    step    INTEGER NOT NULL,
    kind    TEXT,               -- snapshot | skip | delta (agentnb.store.chains); NULL: no checkpoint
    node    TEXT NOT NULL,
    at      REAL NOT NULL,
    tasks   TEXT,               -- the next superstep's frontier (JSON), NULL for a linear run
    events  TEXT NOT NULL,      -- JSON array of [seq, step, type, node, payload, at]
    state   TEXT,               -- the checkpoint's body (JSON); NULL with kind
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

INSERT INTO entries_0012 (run_id, seq, step, kind, node, at, tasks, events, state)
SELECT run_id, seq, step, kind, node, at, tasks, events, state FROM entries ORDER BY run_id, seq;

DROP TABLE entries;  -- and its indexes, entries_chain and entries_anchors
ALTER TABLE entries_0012 RENAME TO entries;

-- The anchors alone (0011's index, unchanged): snapshots and skips, by step.
CREATE INDEX entries_anchors ON entries (run_id, step, seq, kind)
WHERE kind <> 'delta';
