-- 0019 (PostgreSQL): the session's transcript usage, summed from its turns: what the
-- agent itself reported for each closed turn (input, output, cache-read and
-- cache-creation tokens, and the cost). Kept apart from the usage-report counters
-- (total_*_tokens), which only usage reports move. Ingest adds a turn's usage once,
-- with its newly recorded turn key. Sessions from before this migration are backfilled
-- from their turn rows: the usage a row's result reports, else the row's own usage
-- (the per-message fold). Turns that wrote no row are not counted.
-- Read as `json`, not `jsonb`, which refuses text holding \u0000; only whole numbers
-- are summed, and a row whose metadata holds NaN or Infinity (valid for Python's json,
-- not for PostgreSQL's) is skipped rather than failing the upgrade.
ALTER TABLE agent_sessions ADD COLUMN transcript_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_cache_read_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_cache_creation_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_sessions ADD COLUMN transcript_cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;

UPDATE agent_sessions SET
    transcript_input_tokens = sums.input_tokens,
    transcript_output_tokens = sums.output_tokens,
    transcript_cache_read_tokens = sums.cache_read,
    transcript_cache_creation_tokens = sums.cache_creation,
    transcript_cost_usd = sums.cost
FROM (
    SELECT session_id,
           SUM(CASE WHEN input_tokens ~ '^[0-9]{1,15}$' THEN input_tokens::bigint ELSE 0 END) AS input_tokens,
           SUM(CASE WHEN output_tokens ~ '^[0-9]{1,15}$' THEN output_tokens::bigint ELSE 0 END) AS output_tokens,
           SUM(CASE WHEN cache_read ~ '^[0-9]{1,15}$' THEN cache_read::bigint ELSE 0 END) AS cache_read,
           SUM(CASE WHEN cache_creation ~ '^[0-9]{1,15}$' THEN cache_creation::bigint ELSE 0 END) AS cache_creation,
           SUM(CASE WHEN cost ~ '^[0-9]{1,9}(\.[0-9]+)?([eE]-?[0-9]{1,3})?$' THEN cost::double precision
                    ELSE 0 END) AS cost
    FROM (
        SELECT session_id,
               COALESCE(metadata::json #>> '{result,usage,input_tokens}',
                        metadata::json #>> '{usage,input_tokens}') AS input_tokens,
               COALESCE(metadata::json #>> '{result,usage,output_tokens}',
                        metadata::json #>> '{usage,output_tokens}') AS output_tokens,
               COALESCE(metadata::json #>> '{result,usage,cache_read_input_tokens}',
                        metadata::json #>> '{result,usage,cached_input_tokens}',
                        metadata::json #>> '{usage,cache_read_input_tokens}') AS cache_read,
               COALESCE(metadata::json #>> '{result,usage,cache_creation_input_tokens}',
                        metadata::json #>> '{usage,cache_creation_input_tokens}') AS cache_creation,
               metadata::json #>> '{result,total_cost_usd}' AS cost
        FROM session_messages
        WHERE substr(turn_key, 1, 5) = 'turn:'
          AND position('NaN' in metadata) = 0 AND position('Infinity' in metadata) = 0
    ) AS turn_rows
    GROUP BY session_id
) AS sums
WHERE agent_sessions.session_id = sums.session_id;
