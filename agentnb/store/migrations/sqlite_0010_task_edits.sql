-- agentnb SQLite schema: approve with edits when a superstep holds several tasks.
-- The edit an accepted approval of one held task carries: JSON
-- {"update": {...}, "replaces": [keys without a reducer]}. The driver runs that task on the
-- superstep's state with `update` merged in, and merges `update` into the superstep's
-- result; `replaces` lets a concurrent edit of another task that replaces the same key be
-- refused in its own decision transaction. NULL: approved (or pending) as shown.
ALTER TABLE pending_tasks ADD COLUMN edit TEXT;
