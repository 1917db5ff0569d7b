"""SQL for `session_turns`: every turn key a session has closed, held once."""
from sqlalchemy import bindparam
from sqlalchemy import text

from app.storage.repositories.dialect import on_driver
from app.storage.repositories.dialect import placeholders

# One row of VALUES per key; a key stored already (or twice in the list) is skipped.
INSERT_IF_NEW = (
    "INSERT INTO session_turns (session_id, turn_key, closed_at) VALUES {rows}"
    " ON CONFLICT (session_id, turn_key) DO NOTHING RETURNING turn_key"
)

SELECT_KNOWN = text(
    "SELECT turn_key FROM session_turns WHERE session_id = :session_id AND turn_key IN :keys"
).bindparams(bindparam("keys", expanding=True))


class TurnRepository:
    """Records closed turns on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_many_if_new(self, session_id, turn_keys, now):
        """Record each turn key; returns the keys that were new (the turn counter's
        delta is their number).

        One statement for all the keys, reading the keys RETURNING hands back (in no
        particular order).
        """
        if not turn_keys:
            return []
        row = f"({placeholders(self.conn, 3)})"
        sql = INSERT_IF_NEW.format(rows=", ".join([row] * len(turn_keys)))
        params = [value for key in turn_keys for value in (session_id, key, now)]
        return [row[0] for row in on_driver(self.conn, sql, params)]

    def known(self, session_id, turn_keys):
        """Which of `turn_keys` the session has closed."""
        if not turn_keys:
            return set()
        rows = self.conn.execute(SELECT_KNOWN, {"session_id": session_id, "keys": list(turn_keys)})
        return {row[0] for row in rows}
