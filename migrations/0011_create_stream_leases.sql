-- 0011: stream_leases, one row per open live stream of a token, so that the
-- per-token stream limit (TURNLOG_MAX_STREAMS_PER_TOKEN) holds across worker
-- processes and instances. A stream renews its row while it runs and deletes it
-- when it closes; a row left by a process that died simply expires.
CREATE TABLE stream_leases (
    lease_id    TEXT PRIMARY KEY,
    token_id    BIGINT NOT NULL REFERENCES agent_tokens (id) ON DELETE CASCADE,
    session_id  TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);

CREATE INDEX ix_stream_leases_token ON stream_leases (token_id, expires_at);
