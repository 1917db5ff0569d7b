-- 0013 (PostgreSQL): wake live followers on every instance at once. Each time a
-- session's buffer grows or its status changes, the transaction that did it sends a
-- NOTIFY on channel turnlog_live with the session id; PostgreSQL delivers it at
-- commit, to every connection that LISTENs (one per worker process that follows
-- streams, app/storage/live_notify.py). A trigger rather than a
-- statement of the ingest path: it costs that path no round trip, and no writer can
-- forget it. Notifications of one transaction with the same payload arrive once.
CREATE OR REPLACE FUNCTION turnlog_notify_live() RETURNS trigger AS '
BEGIN
    PERFORM pg_notify(''turnlog_live'', NEW.session_id);
    RETURN NEW;
END
' LANGUAGE plpgsql;

-- OR REPLACE (PostgreSQL 14+) also keeps the migration runner's statement splitter,
-- which reads SQLite's grammar, from waiting for a BEGIN ... END trigger body.
CREATE OR REPLACE TRIGGER agent_sessions_notify_live
    AFTER UPDATE OF next_event_index, status ON agent_sessions
    FOR EACH ROW
    WHEN (OLD.next_event_index IS DISTINCT FROM NEW.next_event_index
          OR OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION turnlog_notify_live();
