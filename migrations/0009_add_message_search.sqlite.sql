-- 0009 (SQLite): full-text search over the visible text of transcript rows.
-- An FTS5 index with external content (the text lives once, in session_messages),
-- English stemming (porter), kept in step with the table by triggers; the
-- PostgreSQL file of this migration does the same with a tsvector column.
CREATE VIRTUAL TABLE session_messages_fts USING fts5(
    content,
    content = 'session_messages',
    content_rowid = 'id',
    tokenize = 'porter unicode61'
);

INSERT INTO session_messages_fts (session_messages_fts) VALUES ('rebuild');

CREATE TRIGGER session_messages_fts_insert AFTER INSERT ON session_messages BEGIN
    INSERT INTO session_messages_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER session_messages_fts_delete AFTER DELETE ON session_messages BEGIN
    INSERT INTO session_messages_fts (session_messages_fts, rowid, content)
    VALUES ('delete', old.id, old.content);
END;

CREATE TRIGGER session_messages_fts_update AFTER UPDATE OF content ON session_messages BEGIN
    INSERT INTO session_messages_fts (session_messages_fts, rowid, content)
    VALUES ('delete', old.id, old.content);
    INSERT INTO session_messages_fts (rowid, content) VALUES (new.id, new.content);
END;
