-- 0007: two more transcript counters on agent_sessions, and session_turns, the
-- set of turn keys a session has closed.
-- conversation_turn_count counts the turns the accumulator closed, whether or not a
-- row was written for them; visible_message_count counts the assistant rows with
-- visible text. Both move, like message_count, only with a newly inserted key, so a
-- replayed turn counts once. Sessions that existed before this migration are backfilled
-- from their transcript: the turns that wrote a row, and the assistant rows with text
-- (the policy stores "" for a turn with no visible text). Turns of those sessions that
-- wrote no row were never recorded and cannot be counted.
ALTER TABLE agent_sessions ADD COLUMN conversation_turn_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN visible_message_count BIGINT NOT NULL DEFAULT 0;

CREATE TABLE session_turns (
    session_id TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    turn_key   TEXT NOT NULL,
    closed_at  TEXT NOT NULL,
    PRIMARY KEY (session_id, turn_key)
);

INSERT INTO session_turns (session_id, turn_key, closed_at)
    SELECT session_id, turn_key, timestamp FROM session_messages
    WHERE substr(turn_key, 1, 5) = 'turn:';

UPDATE agent_sessions SET
    conversation_turn_count = (SELECT COUNT(*) FROM session_turns t
                               WHERE t.session_id = agent_sessions.session_id),
    visible_message_count = (SELECT COUNT(*) FROM session_messages m
                             WHERE m.session_id = agent_sessions.session_id
                               AND m.role = 'assistant' AND m.content <> '');
