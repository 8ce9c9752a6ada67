-- agentnb PostgreSQL schema, version 6: the journal's reads use the primary key, as
-- SQLite's version 12 (agentnb.store.sql_checkpoints).

-- Listing a history and walking deltas back to their anchor now read the primary key
-- (run_id, seq): the latest checkpoint backwards from the run's last entry, the deltas
-- forwards from their anchor with a LIMIT, the listing the run's range. The covering
-- index entries_chain is read by none of them (EXPLAIN: the primary key, or a scan when
-- the run is most of the table) and cost every step an index insert: it goes
-- (bench_postgres, synchronous_commit=off: 1.35-1.51x the floor with it, 1.29-1.31x
-- without; a 2,000-step history lists in 2-3 ms and loads any step in under 4 ms either
-- way). entries_anchors stays: the anchors back to a snapshot are a few rows among
-- thousands.
--
-- The table keeps its column order: SQLite rebuilt its own so the small columns come
-- before the bodies (its rows are B-tree records that overflow into pages of their own),
-- while PostgreSQL stores a value over about 2 KB out of the row (TOAST), so reading
-- step, kind, node or at never reads a state, whatever the order.
DROP INDEX IF EXISTS entries_chain;
