"""SQL for `session_turn_states`: the open turn of each session, between requests."""
import json

from sqlalchemy import text

SELECT = text("SELECT buffer FROM session_turn_states WHERE session_id = :session_id")
UPSERT = text(
    "INSERT INTO session_turn_states (session_id, buffer, updated_at)"
    " VALUES (:session_id, :buffer, :now)"
    " ON CONFLICT (session_id) DO UPDATE SET buffer = excluded.buffer,"
    " updated_at = excluded.updated_at"
)


class TurnStateRepository:
    def __init__(self, conn):
        self.conn = conn

    def load(self, session_id):
        """The stored accumulator snapshot, or None for a session with no open turn."""
        row = self.conn.execute(SELECT, {"session_id": session_id}).first()
        return json.loads(row[0]) if row else None

    def save(self, session_id, snapshot, now):
        self.conn.execute(
            UPSERT, {"session_id": session_id, "buffer": json.dumps(snapshot), "now": now}
        )
