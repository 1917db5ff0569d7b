"""SQL for `session_turns`: every turn key a session has closed, held once."""
from sqlalchemy import text

INSERT_IF_NEW = text(
    "INSERT INTO session_turns (session_id, turn_key, closed_at)"
    " VALUES (:session_id, :turn_key, :now)"
    " ON CONFLICT (session_id, turn_key) DO NOTHING RETURNING turn_key"
)


class TurnRepository:
    """Records closed turns on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_many_if_new(self, session_id, turn_keys, now):
        """Record each turn key; returns how many were new (the turn counter's delta).

        One statement per key, counting what RETURNING hands back, as for messages.
        """
        added = 0
        for key in turn_keys:
            row = self.conn.execute(
                INSERT_IF_NEW, {"session_id": session_id, "turn_key": key, "now": now}
            ).first()
            if row is not None:
                added += 1
        return added
