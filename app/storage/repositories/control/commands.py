"""SQL for `session_commands`: what a session's runner must do, in the order accepted."""
import json

from sqlalchemy import text

from app.core.records import SessionCommand

COLUMNS = "command_id, session_id, kind, body, created_by, created_at, acked_at, outcome, reason"
INSERT = text(
    "INSERT INTO session_commands (session_id, kind, body, created_by, created_at)"
    f" VALUES (:session_id, :kind, :body, :created_by, :created_at) RETURNING {COLUMNS}"
)
# The command channel: what the runner has not acknowledged, after its cursor.
SELECT_UNACKED_AFTER = text(
    f"SELECT {COLUMNS} FROM session_commands"
    " WHERE session_id = :session_id AND command_id > :after AND acked_at IS NULL"
    " ORDER BY command_id LIMIT :limit"
)
SELECT_ONE = text(
    f"SELECT {COLUMNS} FROM session_commands"
    " WHERE session_id = :session_id AND command_id = :command_id"
)
# Only the first acknowledgement is kept; a repeat (a runner retrying) changes nothing.
ACK = text(
    "UPDATE session_commands SET acked_at = :acked_at, outcome = :outcome, reason = :reason"
    " WHERE session_id = :session_id AND command_id = :command_id AND acked_at IS NULL"
)
# The command bell's poll where no notification crosses processes (SQLite): the newest
# command, and which sessions have one above a command id (a range of the primary key).
SELECT_NEWEST_ID = text("SELECT COALESCE(MAX(command_id), 0) FROM session_commands")
SELECT_MOVED_AFTER = text(
    "SELECT session_id, MAX(command_id) FROM session_commands WHERE command_id > :after"
    " GROUP BY session_id"
)
SELECT_LATEST_OF_KIND = text(
    f"SELECT {COLUMNS} FROM session_commands"
    " WHERE session_id = :session_id AND kind = :kind ORDER BY command_id DESC LIMIT 1"
)


class CommandRepository:
    """Queues, reads and acknowledges a session's commands on one connection."""

    def __init__(self, conn):
        self.conn = conn

    def add(self, session_id, kind, body, created_by, now):
        """Queue a command of `kind` with its `body` (a dict); the SessionCommand."""
        row = self.conn.execute(INSERT, {
            "session_id": session_id, "kind": kind, "body": json.dumps(body),
            "created_by": created_by, "created_at": now,
        }).mappings().one()
        return _to_command(row)

    def unacked_after(self, session_id, after, limit=100):
        """The session's commands not yet acknowledged with an id above `after`, oldest first."""
        rows = self.conn.execute(SELECT_UNACKED_AFTER, {
            "session_id": session_id, "after": after, "limit": limit}).mappings()
        return [_to_command(row) for row in rows]

    def find(self, session_id, command_id):
        """The session's command of that id, or None."""
        row = self.conn.execute(SELECT_ONE, {
            "session_id": session_id, "command_id": command_id}).mappings().first()
        return _to_command(row) if row is not None else None

    def ack(self, session_id, command_id, outcome, reason, now):
        """Record the runner's acknowledgement; False when it was acknowledged before."""
        result = self.conn.execute(ACK, {
            "session_id": session_id, "command_id": command_id, "outcome": outcome,
            "reason": reason, "acked_at": now})
        return result.rowcount == 1

    def moved_after(self, after):
        """(the newest command id, the ids of the sessions with a command above `after`);
        with `after` None, the newest id alone (and no sessions)."""
        if after is None:
            return self.conn.execute(SELECT_NEWEST_ID).scalar_one(), []
        rows = self.conn.execute(SELECT_MOVED_AFTER, {"after": after}).all()
        return max([after, *(newest for _, newest in rows)]), [sid for sid, _ in rows]

    def latest(self, session_id, kind):
        """The session's newest command of `kind`, or None."""
        row = self.conn.execute(SELECT_LATEST_OF_KIND, {
            "session_id": session_id, "kind": kind}).mappings().first()
        return _to_command(row) if row is not None else None


def _to_command(row):
    data = {name: row[name] for name in COLUMNS.split(", ")}
    data["body"] = json.loads(data["body"] or "{}")
    return SessionCommand(**data)
