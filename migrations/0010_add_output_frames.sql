-- 0010: remote_runtime_outputs.event_json, the `data` of each line's SSE `output`
-- event ({"event_index","stream","payload","created_at"} as compact JSON), written
-- by ingest with the row so that replay sends it as stored instead of escaping
-- every payload again on every read. Rows stored before this migration (or by an
-- instance not yet upgraded) keep NULL; the stream builds their JSON when it reads
-- them, and they leave the buffer with its retention period. The partial index
-- holds only those rows, so replay finds them in a page without looking at the rest.
ALTER TABLE remote_runtime_outputs ADD COLUMN event_json TEXT;

CREATE INDEX ix_outputs_without_event_json
    ON remote_runtime_outputs (session_id, event_index) WHERE event_json IS NULL;
