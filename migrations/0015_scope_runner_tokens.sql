-- 0015: scoped and expiring tokens.
-- allowed_users: a JSON array of the users a runner token may open and write sessions
-- for; NULL means any user (every runner token from before this migration keeps
-- working as it did; create-runner-token now asks for --user or --any-user).
-- expires_at: when the token stops working; NULL means never.
-- session_id: set on a session's own write token, valid for that session only; it
-- gets its expires_at when the session completes (plus a grace period).
ALTER TABLE agent_tokens ADD COLUMN allowed_users TEXT;
ALTER TABLE agent_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE agent_tokens ADD COLUMN session_id TEXT;

CREATE INDEX ix_agent_tokens_session ON agent_tokens (session_id);
