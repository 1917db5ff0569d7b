"""SQL for `stream_cursors`: the last event index delivered to each stream client."""
from sqlalchemy import text

SELECT = text(
    "SELECT last_delivered FROM stream_cursors"
    " WHERE session_id = :session_id AND client_id = :client_id"
)
# Never moves backwards: a slow old connection cannot rewind a newer one's cursor.
UPSERT = text(
    "INSERT INTO stream_cursors (session_id, client_id, last_delivered, updated_at)"
    " VALUES (:session_id, :client_id, :last_delivered, :now)"
    " ON CONFLICT (session_id, client_id) DO UPDATE SET"
    " last_delivered = CASE WHEN excluded.last_delivered > stream_cursors.last_delivered"
    " THEN excluded.last_delivered ELSE stream_cursors.last_delivered END,"
    " updated_at = excluded.updated_at"
)


class StreamCursorRepository:
    """Reads and writes stream client cursors on one connection."""

    def __init__(self, conn):
        self.conn = conn

    def last_delivered(self, session_id, client_id):
        """The last index delivered to this client, or None for a client never seen."""
        row = self.conn.execute(SELECT, {"session_id": session_id, "client_id": client_id}).first()
        return row[0] if row else None

    def set_last_delivered(self, session_id, client_id, last_delivered, now):
        """Record a delivery (ignored when an index at least as high is recorded)."""
        self.conn.execute(UPSERT, {"session_id": session_id, "client_id": client_id,
                                   "last_delivered": last_delivered, "now": now})
