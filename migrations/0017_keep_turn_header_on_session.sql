-- 0017: what an ingest request needs of its session comes back from the one statement
-- that locks the session row, and goes back in the one that updates it, so a small
-- request costs few statements.
-- turn_state: the open turn's small header (identity digest, index range, recent
-- line ids), moved here from session_turn_states; the turn's content blocks stay in
-- session_turn_parts. NULL for a session that has had no output yet.
-- max_seq: the highest producer seq the session has stored. A batch whose seqs are
-- all above it is new without a lookup. Older sessions start from the seqs their
-- buffer still holds, which is all a lookup could have found.
ALTER TABLE agent_sessions ADD COLUMN turn_state TEXT;
ALTER TABLE agent_sessions ADD COLUMN max_seq BIGINT;

UPDATE agent_sessions SET turn_state = (
    SELECT t.buffer FROM session_turn_states t WHERE t.session_id = agent_sessions.session_id);

UPDATE agent_sessions SET max_seq = (
    SELECT MAX(o.producer_seq) FROM remote_runtime_outputs o
    WHERE o.session_id = agent_sessions.session_id);

DROP TABLE session_turn_states;
