-- 0022: the per-user quotas (issue 29), and one spelling of a user for them.
-- user_day_usage: what each user's sessions took on one UTC day (YYYY-MM-DD): the
-- UTF-8 bytes of output accepted and the sessions opened, each moved by one UPSERT in
-- the transaction that accepts the output or opens the session. user_key is the owner
-- normalised (whitespace stripped, case folded), so "QUSER" and "quser " are one user.
-- agent_sessions.owner_key holds the same spelling for the open-sessions quota. Older
-- rows get it from SQL's LOWER(TRIM()), which folds ASCII letters only; the app folds
-- every letter for the sessions it opens from now on.
CREATE TABLE user_day_usage (
    user_key         TEXT NOT NULL,
    day              TEXT NOT NULL,
    output_bytes     BIGINT NOT NULL DEFAULT 0,
    sessions_opened  BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (user_key, day)
);

ALTER TABLE agent_sessions ADD COLUMN owner_key TEXT;

UPDATE agent_sessions SET owner_key = LOWER(TRIM(user_id)) WHERE user_id IS NOT NULL;

CREATE INDEX ix_agent_sessions_owner_key ON agent_sessions (owner_key, status);

-- stream_leases.user_key: the user a stream's token reads for (quotas.user_key()), so
-- that open streams are counted per user as well as per token (MAX_STREAMS_PER_USER).
-- Leases from before have none and lapse within a minute.
ALTER TABLE stream_leases ADD COLUMN user_key TEXT;

CREATE INDEX ix_stream_leases_user ON stream_leases (user_key, expires_at);
