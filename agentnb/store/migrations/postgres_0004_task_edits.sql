-- agentnb PostgreSQL schema, version 4: approve with edits when a superstep holds several
-- tasks, as SQLite's version 10. The edit an accepted approval of one held task carries:
-- JSON {"update": {...}, "replaces": [keys without a reducer]}; NULL: approved (or
-- pending) as shown.
ALTER TABLE pending_tasks ADD COLUMN edit text;
