"""SQL for `session_final_events`: the live events process completion produced."""
from sqlalchemy import text

SELECT = text(
    "SELECT event_index, events FROM session_final_events WHERE session_id = :session_id"
)
# A session completes once (its row is locked and checked first), so a conflict
# can only be a retry of the same completion: keep the first.
INSERT = text(
    "INSERT INTO session_final_events (session_id, event_index, events, created_at)"
    " VALUES (:session_id, :event_index, :events, :now)"
    " ON CONFLICT (session_id) DO NOTHING"
)


class FinalEventRepository:
    def __init__(self, conn):
        self.conn = conn

    def get(self, session_id):
        """(event_index, stored events) of the session's completion, or None."""
        row = self.conn.execute(SELECT, {"session_id": session_id}).first()
        return (row[0], row[1]) if row else None

    def add(self, session_id, event_index, events, now):
        """Store the completion's events (text as app/formats/event_lines.py writes it)."""
        self.conn.execute(INSERT, {"session_id": session_id, "event_index": event_index,
                                   "events": events, "now": now})
