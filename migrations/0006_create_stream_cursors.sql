-- 0006: stream_cursors, the last output event delivered to each named stream
-- client (the `client_id` of GET .../stream), so a client that reconnects
-- without a cursor of its own resumes where it left off.
CREATE TABLE stream_cursors (
    session_id     TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    client_id      TEXT NOT NULL,
    last_delivered BIGINT  NOT NULL,
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (session_id, client_id)
);
