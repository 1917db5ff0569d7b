-- 0023: session_inputs, the prompts a person sends to a live session (issue 30), queued
-- here so that a server restart, a runner restart or a dropped connection loses none.
-- client_message_id is the sender's own name for the prompt: unique per session, so a
-- retried POST finds the row the first one wrote instead of writing a second.
-- state moves queued -> delivered (the runner took it) -> applied (the agent took it, and
-- it is a transcript row now), or to failed with a reason. created_by is the caller's name.
CREATE TABLE session_inputs (
    input_id           INTEGER PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    client_message_id  TEXT NOT NULL,
    content            TEXT NOT NULL,
    state              TEXT NOT NULL DEFAULT 'queued'
                       CHECK (state IN ('queued', 'delivered', 'applied', 'failed')),
    reason             TEXT,
    created_by         TEXT,
    created_at         TEXT NOT NULL,
    delivered_at       TEXT,
    applied_at         TEXT,
    UNIQUE (session_id, client_message_id)
);

-- The inputs not yet applied, oldest first (GET .../sessions/<id>, pending_inputs).
CREATE INDEX ix_session_inputs_state ON session_inputs (session_id, state, input_id);
