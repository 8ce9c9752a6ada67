-- agentnb SQLite schema: statechart state and durable timers.
-- A statechart instance keeps its configuration, history values and session beside its
-- state (JSON in machine_instances.chart). A delayed event is a row of machine_timers,
-- written in the same transaction as the step that scheduled it; the step that processes
-- it deletes the row, and its event record has event_id 'timer:' || key, which is unique
-- per instance, so no two processes can fire one timer twice.
ALTER TABLE machine_instances ADD COLUMN chart TEXT;

CREATE TABLE machine_timers (
    instance_id  TEXT NOT NULL,
    key          TEXT NOT NULL,    -- orders timers of one instance that fire at the same time
    sendid       TEXT,             -- the cancellation id (<send id>), if any
    event        TEXT NOT NULL,
    data         TEXT NOT NULL,    -- the whole event (name, data, sendid, origin ...) as JSON
    fire_at      REAL NOT NULL,
    PRIMARY KEY (instance_id, key)
) WITHOUT ROWID;

CREATE INDEX machine_timers_due ON machine_timers (fire_at);
CREATE INDEX machine_timers_sendid ON machine_timers (instance_id, sendid);
