-- agentnb PostgreSQL schema, version 7: what a write whose COMMIT was cut off asks about.
--
-- A write transaction ends by setting its connection's row here to a mark of its own
-- (agentnb.store.postgres_session), in the COMMIT's round trip. When the connection is
-- lost before the COMMIT's answer arrives, the store reconnects and reads the row: the
-- write committed if and only if the row holds its mark, as only that connection's
-- transactions write it. Asking the server about the transaction id instead
-- (pg_xact_status) is wrong after a crash: ids that were never made durable are handed
-- out again, so the answer can be another client's transaction.
--
-- One row per connection key (a store's connection, a pooled store's thread), updated in
-- place; rows untouched for a day belong to processes that are gone and are deleted when
-- a store opens.
CREATE TABLE IF NOT EXISTS commit_marks (
    session bigint PRIMARY KEY,
    mark bigint NOT NULL,
    at timestamptz NOT NULL
);
