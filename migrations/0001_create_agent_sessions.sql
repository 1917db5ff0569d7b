-- 0001: agent_sessions, one row per remote agent session, with its counters.
-- message_count counts assistant/system transcript rows; the token and request
-- counters move only with usage reports. next_event_index numbers the output buffer.
CREATE TABLE agent_sessions (
    session_id          TEXT PRIMARY KEY,
    user_id             TEXT,
    session_type        TEXT NOT NULL
                        CHECK (session_type IN ('chat', 'agent', 'terminal', 'workflow')),
    context             TEXT NOT NULL DEFAULT '{}',
    status              TEXT NOT NULL DEFAULT 'running',
    provider            TEXT NOT NULL DEFAULT 'claude',
    exit_code           INTEGER,
    message_count       INTEGER NOT NULL DEFAULT 0,
    request_count       INTEGER NOT NULL DEFAULT 0,
    total_tokens        INTEGER NOT NULL DEFAULT 0,
    total_input_tokens  INTEGER NOT NULL DEFAULT 0,
    total_output_tokens INTEGER NOT NULL DEFAULT 0,
    next_event_index    INTEGER NOT NULL DEFAULT 0,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL
);

CREATE INDEX ix_agent_sessions_created ON agent_sessions (created_at, session_id);
