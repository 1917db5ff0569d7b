"""SQL for the open turn of each session: a small header (`agent_sessions.turn_state`,
which the ingest lock also returns) and `session_turn_parts` (its content blocks,
appended as they arrive)."""
from sqlalchemy import text

from app.formats import fast_json
from app.storage.repositories.dialect import on_driver

SELECT = text("SELECT turn_state FROM agent_sessions WHERE session_id = :session_id")
SAVE = text(
    "UPDATE agent_sessions SET turn_state = :buffer, updated_at = :now"
    " WHERE session_id = :session_id"
)
SELECT_PARTS = text(
    "SELECT part FROM session_turn_parts WHERE session_id = :session_id ORDER BY part_index"
)
# On the driver's cursor (`{m}` marks a parameter): most ingest requests append a part.
INSERT_PART = (
    "INSERT INTO session_turn_parts (session_id, part_index, part) VALUES ({m}, {m}, {m})"
)
UPDATE_PART = text(
    "UPDATE session_turn_parts SET part = :part"
    " WHERE session_id = :session_id AND part_index = :part_index"
)
# Read and release in one statement; RETURNING has no order, so the caller sorts.
TAKE_PARTS = "DELETE FROM session_turn_parts WHERE session_id = {m} RETURNING part_index, part"
DELETE_PARTS_FROM = text(
    "DELETE FROM session_turn_parts WHERE session_id = :session_id AND part_index >= :start")


class TurnStateRepository:
    def __init__(self, conn):
        self.conn = conn

    def load(self, session_id):
        """The stored accumulator snapshot, or None for a session with no state yet."""
        row = self.conn.execute(SELECT, {"session_id": session_id}).first()
        return fast_json.loads(row[0]) if row and row[0] else None

    def save(self, session_id, snapshot, now):
        """Replace the session's snapshot."""
        self.conn.execute(
            SAVE, {"session_id": session_id, "buffer": fast_json.dumps(snapshot), "now": now}
        )

    def load_parts(self, session_id):
        """The open turn's saved content blocks, in arrival order."""
        rows = self.conn.execute(SELECT_PARTS, {"session_id": session_id})
        return [fast_json.loads(row[0]) for row in rows]

    def append_parts(self, session_id, start, parts):
        """Save blocks numbered from `start` (the count already saved)."""
        if parts:
            on_driver(self.conn, INSERT_PART,
                      [(session_id, start + n, fast_json.dumps(p)) for n, p in enumerate(parts)],
                      many=True)

    def replace_parts(self, session_id, restated):
        """Write new content over saved blocks: `restated` is {part number: part}."""
        if restated:
            self.conn.execute(
                UPDATE_PART,
                [
                    {"session_id": session_id, "part_index": n, "part": fast_json.dumps(p)}
                    for n, p in sorted(restated.items())
                ],
            )

    def take_parts(self, session_id):
        """The open turn's saved content blocks in arrival order, released: its turn
        is being flushed."""
        rows = on_driver(self.conn, TAKE_PARTS, (session_id,))
        return [fast_json.loads(part) for _, part in sorted(rows)]

    def drop_parts_from(self, session_id, start):
        """Delete the saved parts numbered `start` and up (an undone copy of them)."""
        self.conn.execute(DELETE_PARTS_FROM, {"session_id": session_id, "start": start})
