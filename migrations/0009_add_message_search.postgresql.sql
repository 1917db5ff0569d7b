-- 0009 (PostgreSQL): full-text search over the visible text of transcript rows.
-- A stored generated tsvector (English stemming, like the SQLite file's porter
-- tokenizer), filled for existing rows by the ALTER itself, with a GIN index.
ALTER TABLE session_messages
    ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (to_tsvector('english', content)) STORED;

CREATE INDEX ix_session_messages_search ON session_messages USING GIN (search_vector);
