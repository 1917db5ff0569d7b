-- 0008: who may write and read. agent_tokens holds bearer tokens by their SHA-256
-- only (the token itself is printed once, at creation): runner tokens name a machine,
-- user tokens a user (is_admin = 1 reads every session). A revoked token keeps its row.
-- agent_sessions.machine names the machine whose runner tokens may write the session;
-- agent_sessions.user_id is the owner who may read it.
CREATE TABLE agent_tokens (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL CHECK (kind IN ('runner', 'user')),
    name        TEXT NOT NULL,
    is_admin    INTEGER NOT NULL DEFAULT 0 CHECK (is_admin IN (0, 1)),
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

CREATE INDEX ix_agent_tokens_kind_name ON agent_tokens (kind, name);

ALTER TABLE agent_sessions ADD COLUMN machine TEXT;

CREATE INDEX ix_agent_sessions_owner ON agent_sessions (user_id, created_at, session_id);
