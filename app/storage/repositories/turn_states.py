"""SQL for the open turn of each session: `session_turn_states` (a small header)
and `session_turn_parts` (its content blocks, appended as they arrive)."""
import json

from sqlalchemy import text

SELECT = text("SELECT buffer FROM session_turn_states WHERE session_id = :session_id")
UPSERT = text(
    "INSERT INTO session_turn_states (session_id, buffer, updated_at)"
    " VALUES (:session_id, :buffer, :now)"
    " ON CONFLICT (session_id) DO UPDATE SET buffer = excluded.buffer,"
    " updated_at = excluded.updated_at"
)
SELECT_PARTS = text(
    "SELECT part FROM session_turn_parts WHERE session_id = :session_id ORDER BY part_index"
)
INSERT_PART = text(
    "INSERT INTO session_turn_parts (session_id, part_index, part)"
    " VALUES (:session_id, :part_index, :part)"
)
UPDATE_PART = text(
    "UPDATE session_turn_parts SET part = :part"
    " WHERE session_id = :session_id AND part_index = :part_index"
)
DELETE_PARTS = text("DELETE FROM session_turn_parts WHERE session_id = :session_id")
DELETE_PARTS_FROM = text(
    "DELETE FROM session_turn_parts WHERE session_id = :session_id AND part_index >= :start")


class TurnStateRepository:
    def __init__(self, conn):
        self.conn = conn

    def load(self, session_id):
        """The stored accumulator snapshot, or None for a session with no state yet."""
        row = self.conn.execute(SELECT, {"session_id": session_id}).first()
        return json.loads(row[0]) if row else None

    def save(self, session_id, snapshot, now):
        """Replace the session's snapshot."""
        self.conn.execute(
            UPSERT, {"session_id": session_id, "buffer": json.dumps(snapshot), "now": now}
        )

    def load_parts(self, session_id):
        """The open turn's saved content blocks, in arrival order."""
        rows = self.conn.execute(SELECT_PARTS, {"session_id": session_id})
        return [json.loads(row[0]) for row in rows]

    def append_parts(self, session_id, start, parts):
        """Save blocks numbered from `start` (the count already saved)."""
        if parts:
            self.conn.execute(
                INSERT_PART,
                [
                    {"session_id": session_id, "part_index": start + n, "part": json.dumps(p)}
                    for n, p in enumerate(parts)
                ],
            )

    def replace_parts(self, session_id, restated):
        """Write new content over saved blocks: `restated` is {part number: part}."""
        if restated:
            self.conn.execute(
                UPDATE_PART,
                [
                    {"session_id": session_id, "part_index": n, "part": json.dumps(p)}
                    for n, p in sorted(restated.items())
                ],
            )

    def drop_parts_from(self, session_id, start):
        """Delete the saved parts numbered `start` and up (an undone copy of them)."""
        self.conn.execute(DELETE_PARTS_FROM, {"session_id": session_id, "start": start})

    def clear_parts(self, session_id):
        """Forget the saved blocks once their turn is flushed."""
        self.conn.execute(DELETE_PARTS, {"session_id": session_id})
