-- 0011: the normalized live events (GET .../events) derived from each buffered
-- line by ingest, in the transaction that stores the line: one event per text
-- line, `<name> <data JSON>` (app/formats/event_lines.py); NULL when the line adds
-- nothing to the live view. Rows stored before this migration keep NULL: their
-- turns are in the transcript, and /events skips them.
ALTER TABLE remote_runtime_outputs ADD COLUMN live_events TEXT;

-- The events process completion produces (the open turn's turn.completed, then
-- session.completed), numbered with the session's next_event_index at completion,
-- which no buffered line holds. One row per completed session; it stays as long
-- as the session does (retention prunes buffer lines, not this).
CREATE TABLE session_final_events (
    session_id  TEXT PRIMARY KEY REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    event_index BIGINT NOT NULL,
    events      TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
