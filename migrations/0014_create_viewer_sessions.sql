-- 0014: viewer_sessions, one row per viewer sign-in. The cookie carries a random key
-- and this table only its SHA-256, so signing out (revoked_at) or the row expiring
-- ends the sign-in at once, whatever copies of the cookie exist. Cookies from before
-- this migration carry no key and simply ask their visitor to sign in again.
CREATE TABLE viewer_sessions (
    key_hash    TEXT PRIMARY KEY,
    token_id    BIGINT NOT NULL REFERENCES agent_tokens (id) ON DELETE CASCADE,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    revoked_at  TEXT
);

CREATE INDEX ix_viewer_sessions_expires ON viewer_sessions (expires_at);
