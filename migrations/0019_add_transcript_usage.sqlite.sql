-- 0019 (SQLite): the session's transcript usage, summed from its turns: what the
-- agent itself reported for each closed turn (input, output, cache-read and
-- cache-creation tokens, and the cost). Kept apart from the usage-report counters
-- (total_*_tokens), which only usage reports move. Ingest adds a turn's usage once,
-- with its newly recorded turn key. Sessions from before this migration are backfilled
-- from their turn rows: the usage a row's result reports, else the row's own usage
-- (the per-message fold). Turns that wrote no row are not counted, nor a row whose
-- metadata holds NaN or Infinity (valid for Python's json, malformed for SQLite's).
ALTER TABLE agent_sessions ADD COLUMN transcript_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_cache_read_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_cache_creation_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;

UPDATE agent_sessions SET
    transcript_input_tokens = COALESCE((SELECT SUM(COALESCE(
        json_extract(m.metadata, '$.result.usage.input_tokens'),
        json_extract(m.metadata, '$.usage.input_tokens'))) FROM session_messages m
        WHERE m.session_id = agent_sessions.session_id AND substr(m.turn_key, 1, 5) = 'turn:'
          AND json_valid(m.metadata)), 0),
    transcript_output_tokens = COALESCE((SELECT SUM(COALESCE(
        json_extract(m.metadata, '$.result.usage.output_tokens'),
        json_extract(m.metadata, '$.usage.output_tokens'))) FROM session_messages m
        WHERE m.session_id = agent_sessions.session_id AND substr(m.turn_key, 1, 5) = 'turn:'
          AND json_valid(m.metadata)), 0),
    transcript_cache_read_tokens = COALESCE((SELECT SUM(COALESCE(
        json_extract(m.metadata, '$.result.usage.cache_read_input_tokens'),
        json_extract(m.metadata, '$.result.usage.cached_input_tokens'),
        json_extract(m.metadata, '$.usage.cache_read_input_tokens'))) FROM session_messages m
        WHERE m.session_id = agent_sessions.session_id AND substr(m.turn_key, 1, 5) = 'turn:'
          AND json_valid(m.metadata)), 0),
    transcript_cache_creation_tokens = COALESCE((SELECT SUM(COALESCE(
        json_extract(m.metadata, '$.result.usage.cache_creation_input_tokens'),
        json_extract(m.metadata, '$.usage.cache_creation_input_tokens'))) FROM session_messages m
        WHERE m.session_id = agent_sessions.session_id AND substr(m.turn_key, 1, 5) = 'turn:'
          AND json_valid(m.metadata)), 0),
    transcript_cost_usd = COALESCE((SELECT SUM(
        json_extract(m.metadata, '$.result.total_cost_usd')) FROM session_messages m
        WHERE m.session_id = agent_sessions.session_id AND substr(m.turn_key, 1, 5) = 'turn:'
          AND json_valid(m.metadata)), 0);
