-- agentnb PostgreSQL schema: one format for every machine instance (as SQLite's 0013).
-- A flat StateMachine now runs on the statechart interpreter (agentnb.fsm.flat), so a flat
-- instance written before, with chart NULL, gets the session it stands for: its one active
-- state, no history values, its own id as the session id. Whether it has ended is the
-- definition's to say (agentnb.fsm.session_state.running); context, seq and event records
-- stay as they are.
UPDATE machine_instances
SET chart = json_build_object(
    'configuration', json_build_array(state),
    'history', json_build_object(),
    'sessionid', instance_id
)::text
WHERE chart IS NULL;
