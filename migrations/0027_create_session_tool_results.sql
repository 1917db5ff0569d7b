-- 0027: session_tool_results, the tool output of every session kind (issue 32): one row
-- per tool call a closed turn made, with the result that answers it, and one per result
-- whose call an earlier turn made (tool_name and tool_input NULL). Written by ingest when
-- the turn closes, in the same transaction as its row (if it writes one): the
-- transcript's rows and counters are untouched, so an ordinary session's tool-only turn
-- still writes no session_messages row, but its calls and results are kept here.
-- tool_use_id is the call's id and turn_id the turn's key (session_messages.turn_key); a
-- provider may reuse a call id in a later turn (Codex restarts item ids each run), so a
-- row is unique per (session, turn, call) and a replayed turn writes nothing new.
-- output is the result's text, at most TOOL_RESULT_MAX_BYTES of UTF-8 (truncated = 1:
-- its first and last parts around a marker); output_bytes is the whole output's size.
-- message_id is the assistant row its turn wrote, NULL when the turn wrote none;
-- after_message_id is where it sits in the transcript: its own row, or for a turn
-- without one the session's newest row when the turn closed (0: none yet).
CREATE TABLE session_tool_results (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    turn_id          TEXT NOT NULL,
    tool_use_id      TEXT NOT NULL,
    tool_name        TEXT,
    tool_input       TEXT,
    has_result       INTEGER NOT NULL DEFAULT 0 CHECK (has_result IN (0, 1)),
    is_error         INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    output           TEXT NOT NULL DEFAULT '',
    output_bytes     BIGINT NOT NULL DEFAULT 0,
    truncated        INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
    message_id       BIGINT,
    after_message_id BIGINT NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    UNIQUE (session_id, turn_id, tool_use_id)
);

-- A page of messages reads the results of its rows, and of the turns without a row
-- that sit among them.
CREATE INDEX ix_session_tool_results_message ON session_tool_results (session_id, message_id);
CREATE INDEX ix_session_tool_results_place ON session_tool_results (session_id, after_message_id, id);
