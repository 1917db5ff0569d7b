-- 0005: session_turn_states, the open (not yet flushed) turn of each session,
-- saved in the same transaction as the lines that changed it, so a restart
-- between two lines of one turn loses nothing.
CREATE TABLE session_turn_states (
    session_id TEXT PRIMARY KEY REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    buffer     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
