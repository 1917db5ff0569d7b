-- 0010: remote_runtime_outputs.event_json, the `data` of each line's SSE `output`
-- event ({"event_index","stream","payload","created_at"} as compact JSON), written
-- by ingest with the row so that replay sends it as stored instead of escaping
-- every payload again on every read. Rows stored before this migration (or by an
-- instance not yet upgraded) keep NULL; the stream builds their JSON when it reads
-- them, and they leave the buffer with its retention period.
ALTER TABLE remote_runtime_outputs ADD COLUMN event_json TEXT;
