-- 0003: remote_runtime_outputs, the live output buffer: every raw line a runner
-- posted, numbered gap-free per session by event_index. Rows expire; the
-- transcript in session_messages does not.
CREATE TABLE remote_runtime_outputs (
    session_id   TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    event_index  BIGINT  NOT NULL,
    stream       TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr', 'system')),
    payload      TEXT NOT NULL,
    producer_seq BIGINT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, event_index)
);

CREATE UNIQUE INDEX ux_outputs_producer_seq
    ON remote_runtime_outputs (session_id, producer_seq);
CREATE INDEX ix_outputs_expires ON remote_runtime_outputs (expires_at);
