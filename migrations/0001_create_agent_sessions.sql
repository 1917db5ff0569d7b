-- 0001: agent_sessions, one row per remote agent session, with its counters.
-- message_count counts assistant/system transcript rows; the token and request
-- counters move only with usage reports. next_event_index numbers the output buffer.
-- Counters and indices are BIGINT: 64-bit on PostgreSQL; on SQLite BIGINT has INTEGER
-- affinity, which is 64-bit already.
CREATE TABLE agent_sessions (
    session_id          TEXT PRIMARY KEY,
    user_id             TEXT,
    session_type        TEXT NOT NULL
                        CHECK (session_type IN ('chat', 'agent', 'terminal', 'workflow')),
    context             TEXT NOT NULL DEFAULT '{}',
    status              TEXT NOT NULL DEFAULT 'running',
    provider            TEXT NOT NULL DEFAULT 'claude',
    exit_code           INTEGER,
    message_count       BIGINT  NOT NULL DEFAULT 0,
    request_count       BIGINT  NOT NULL DEFAULT 0,
    total_tokens        BIGINT  NOT NULL DEFAULT 0,
    total_input_tokens  BIGINT  NOT NULL DEFAULT 0,
    total_output_tokens BIGINT  NOT NULL DEFAULT 0,
    next_event_index    BIGINT  NOT NULL DEFAULT 0,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL
);

CREATE INDEX ix_agent_sessions_created ON agent_sessions (created_at, session_id);
