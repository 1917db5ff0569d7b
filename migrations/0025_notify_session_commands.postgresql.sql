-- 0025 (PostgreSQL): wake waiting runners on every instance at once. Each new row of
-- session_commands sends a NOTIFY on channel turnlog_commands with its session id;
-- PostgreSQL delivers it at commit to every connection that LISTENs (one per worker
-- process with a runner waiting on its command channel, app/services/commands.py).
-- A trigger, as 0013's, so that no path that queues a command can forget it.
CREATE OR REPLACE FUNCTION turnlog_notify_commands() RETURNS trigger AS '
BEGIN
    PERFORM pg_notify(''turnlog_commands'', NEW.session_id);
    RETURN NEW;
END
' LANGUAGE plpgsql;

CREATE OR REPLACE TRIGGER session_commands_notify
    AFTER INSERT ON session_commands
    FOR EACH ROW
    EXECUTE FUNCTION turnlog_notify_commands();
