-- agentnb PostgreSQL schema: approve with edits when a superstep holds several tasks (the
-- twin of sqlite_0010_task_edits.sql; the row functions are shared). The edit an accepted
-- approval of one held task carries, JSON {"update": {...}, "replaces": [keys without a
-- reducer]}; NULL: approved (or pending) as shown.
ALTER TABLE pending_tasks ADD COLUMN edit text;
