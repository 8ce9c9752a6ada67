-- agentnb SQLite schema: one format for every machine instance.
-- A flat StateMachine now runs on the statechart interpreter (agentnb.fsm.flat), so its
-- instances keep the interpreter's session in machine_instances.chart, as a statechart's
-- do. A flat instance written before kept chart NULL: its session is its one active state
-- (a flat machine has no nesting, no history values, no timers and no datamodel to bind),
-- under its own id as the session id. Whether it has ended is left out: that is the
-- definition's to say (a top-level final state), and agentnb.fsm.session_state.running
-- reads it so. Its context, seq and event records stay as they are.
UPDATE machine_instances
SET chart = json_object(
    'configuration', json_array(state),
    'history', json_object(),
    'sessionid', instance_id
)
WHERE chart IS NULL;
