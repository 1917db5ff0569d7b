-- 0016: what the quotas count.
-- opened_by_token: the token that opened the session, for the sessions-per-token-per-
-- minute quota (NULL for sessions opened without a token, or before this migration).
-- output_bytes: the UTF-8 bytes of output the session has accepted, for the output
-- quota. Older sessions start from the characters their buffer still holds: what was
-- pruned before this migration is not counted.
ALTER TABLE agent_sessions ADD COLUMN opened_by_token BIGINT;
ALTER TABLE agent_sessions ADD COLUMN output_bytes BIGINT NOT NULL DEFAULT 0;

CREATE INDEX ix_agent_sessions_opener ON agent_sessions (opened_by_token, created_at);

UPDATE agent_sessions SET output_bytes = COALESCE(
    (SELECT SUM(LENGTH(o.payload)) FROM remote_runtime_outputs o
     WHERE o.session_id = agent_sessions.session_id), 0);
