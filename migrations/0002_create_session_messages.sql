-- 0002: session_messages, the durable transcript.
-- turn_key names the turn a row came from; its uniqueness per session is what
-- makes a replayed stream write nothing new.
-- `id INTEGER PRIMARY KEY` is SQLite's rowid alias; the migration runner turns it into an
-- identity column on PostgreSQL (app/storage/repositories/dialect.py).
CREATE TABLE session_messages (
    id             INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    role           TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content        TEXT NOT NULL DEFAULT '',
    content_blocks TEXT NOT NULL DEFAULT '[]',
    metadata       TEXT NOT NULL DEFAULT '{}',
    source         TEXT NOT NULL,
    turn_key       TEXT NOT NULL,
    timestamp      TEXT NOT NULL,
    UNIQUE (session_id, turn_key)
);

CREATE INDEX ix_session_messages_order ON session_messages (session_id, timestamp, id);
CREATE INDEX ix_session_messages_page ON session_messages (session_id, id);
