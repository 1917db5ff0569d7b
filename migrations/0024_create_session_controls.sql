-- 0024: the control channel of a live session (issue 30, docs/control.md).
-- session_commands: what a session's runner must do, in the order the server accepted
-- it (command_id, one sequence for every session): deliver an input, pass a permission
-- answer, interrupt the turn, stop the agent. body is the command's JSON for the
-- runner. acked_at/outcome/reason are the runner's acknowledgement: a command
-- acknowledged is never sent to the runner again.
CREATE TABLE session_commands (
    command_id   INTEGER PRIMARY KEY,
    session_id   TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('input', 'permission', 'interrupt', 'stop')),
    body         TEXT NOT NULL DEFAULT '{}',
    created_by   TEXT,
    created_at   TEXT NOT NULL,
    acked_at     TEXT,
    outcome      TEXT CHECK (outcome IN ('done', 'failed')),
    reason       TEXT
);

-- The command channel reads a session's commands after a cursor.
CREATE INDEX ix_session_commands_session ON session_commands (session_id, command_id);

-- session_permissions: a tool call the agent asked a person to allow, recorded at
-- ingest from the line that asked (event_index). state: pending, then allowed, denied,
-- expired (unanswered by expires_at, NULL: never; denied, fail-closed) or cancelled
-- (the agent withdrew it). resolved_by/resolved_at/message: who answered, when, and
-- the message given to the agent with a denial.
CREATE TABLE session_permissions (
    session_id    TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    request_id    TEXT NOT NULL,
    tool_name     TEXT NOT NULL,
    tool_input    TEXT NOT NULL DEFAULT '{}',
    event_index   BIGINT,
    requested_at  TEXT NOT NULL,
    expires_at    TEXT,
    state         TEXT NOT NULL DEFAULT 'pending'
                  CHECK (state IN ('pending', 'allowed', 'denied', 'expired', 'cancelled')),
    message       TEXT,
    resolved_by   TEXT,
    resolved_at   TEXT,
    PRIMARY KEY (session_id, request_id)
);

-- The expiry sweep looks for pending requests past their time.
CREATE INDEX ix_session_permissions_due ON session_permissions (state, expires_at);

-- The attached runner: what it offers (a JSON list out of send, permissions,
-- interrupt, stop), its last heartbeat, and who asked for the stop that ended the session.
ALTER TABLE agent_sessions ADD COLUMN runner_controls TEXT;
ALTER TABLE agent_sessions ADD COLUMN runner_seen_at TEXT;
ALTER TABLE agent_sessions ADD COLUMN stopped_by TEXT;
