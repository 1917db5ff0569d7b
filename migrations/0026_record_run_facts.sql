-- 0026: what a person needs to tell runs apart and to see why one failed (issue 32).
-- command: the command line the runner ran, a JSON list of its arguments with secrets
-- redacted (app/core/command_line.py); first_prompt: the prompt it started with. Both
-- NULL for sessions opened before this migration, or by a client that sends neither.
-- failure_reason: why the agent never ran (it could not be started), as the runner
-- said; stderr_tail: a failed session's last stderr lines (a JSON list), kept at
-- completion because the buffer they come from expires.
ALTER TABLE agent_sessions ADD COLUMN command TEXT;
ALTER TABLE agent_sessions ADD COLUMN first_prompt TEXT;
ALTER TABLE agent_sessions ADD COLUMN failure_reason TEXT;
ALTER TABLE agent_sessions ADD COLUMN stderr_tail TEXT;

-- The last stderr lines of a session, read once at its completion: the partial index
-- holds the stderr rows alone, so a session of a million stdout lines costs one probe.
CREATE INDEX ix_outputs_stderr
    ON remote_runtime_outputs (session_id, event_index) WHERE stream = 'stderr';
