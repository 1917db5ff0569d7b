-- 0005: the open (not yet flushed) turn of each session, saved in the same
-- transaction as the lines that changed it, so a restart between two lines of
-- one turn loses nothing.
-- session_turn_states holds a small header (identity digest, index range,
-- recent line ids); the turn's content blocks are appended to
-- session_turn_parts, so a long turn is never rewritten as a whole.
CREATE TABLE session_turn_states (
    session_id TEXT PRIMARY KEY REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    buffer     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE session_turn_parts (
    session_id TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    part_index INTEGER NOT NULL,
    part       TEXT NOT NULL,
    PRIMARY KEY (session_id, part_index)
);
