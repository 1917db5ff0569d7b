-- 0009 (PostgreSQL): full-text search over the visible text of transcript rows.
-- A stored generated tsvector (English stemming, like the SQLite file's porter
-- tokenizer), filled for existing rows by the ALTER itself, with a GIN index.
-- Only the first 100,000 characters are indexed: to_tsvector raises "string is too
-- long for tsvector" once lexemes plus positions pass 1 MB, which would make the
-- INSERT of a huge row fail. Crafted text (4-byte letters in hyphenated words) needs
-- about 7.5 bytes per character, so 100,000 stays under 1 MB for any text; ordinary
-- prose of that length is some 15,000 words. Positions past 16383 are clamped, not
-- refused, and the search uses none.
ALTER TABLE session_messages
    ADD COLUMN search_vector tsvector
    GENERATED ALWAYS AS (to_tsvector('english', left(content, 100000))) STORED;

CREATE INDEX ix_session_messages_search ON session_messages USING GIN (search_vector);
