"""SQL for `session_messages`, the durable transcript."""
import json

from sqlalchemy import text

from app.services.models import Message

COLUMNS = "id, session_id, role, content, content_blocks, metadata, source, turn_key, timestamp"
# The unique (session_id, turn_key) makes a replayed turn a no-op, not a second row.
INSERT_IF_NEW = text(
    "INSERT INTO session_messages (session_id, role, content, content_blocks, metadata,"
    " source, turn_key, timestamp) VALUES (:session_id, :role, :content,"
    " :content_blocks, :metadata, :source, :turn_key, :timestamp)"
    " ON CONFLICT (session_id, turn_key) DO NOTHING RETURNING id"
)
SELECT_PAGE = text(
    f"SELECT {COLUMNS} FROM session_messages"
    " WHERE session_id = :session_id AND id > :after ORDER BY id LIMIT :limit"
)
SELECT_ALL = text(f"SELECT {COLUMNS} FROM session_messages WHERE session_id = :session_id ORDER BY id")


class MessageRepository:
    """Reads and writes transcript rows on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def insert_new(self, session_id, drafts, timestamp):
        """Insert each draft unless its turn is already stored; returns the new ones.

        One statement per draft, keeping those whose id RETURNING hands back: an
        executemany's rowcount is a sum on sqlite3 but not on every driver, and a
        request closes few turns.
        """
        added = []
        for draft in drafts:
            row = self.conn.execute(
                INSERT_IF_NEW,
                {
                    "session_id": session_id,
                    "role": draft.role,
                    "content": draft.content,
                    "content_blocks": json.dumps(draft.content_blocks),
                    "metadata": json.dumps(draft.metadata),
                    "source": draft.source,
                    "turn_key": draft.turn_key,
                    "timestamp": timestamp,
                },
            ).first()
            if row is not None:
                added.append(draft)
        return added

    def list_all(self, session_id):
        """Every message of the session, in write order."""
        rows = self.conn.execute(SELECT_ALL, {"session_id": session_id}).mappings()
        return [_to_message(row) for row in rows]

    def list_page(self, session_id, after, limit):
        """Messages in write order with id > `after`."""
        rows = self.conn.execute(
            SELECT_PAGE, {"session_id": session_id, "after": after, "limit": limit}
        ).mappings()
        return [_to_message(row) for row in rows]


def _to_message(row):
    data = dict(row)
    data["content_blocks"] = json.loads(data["content_blocks"] or "[]")
    data["metadata"] = json.loads(data["metadata"] or "{}")
    return Message(**data)
