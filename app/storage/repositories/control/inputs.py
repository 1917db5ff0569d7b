"""SQL for `session_inputs`: the prompts people send to live sessions, queued until applied."""
from sqlalchemy import bindparam
from sqlalchemy import text

from app.core.records import SessionInput

COLUMNS = ("input_id, session_id, client_message_id, content, state, reason, created_by,"
           " created_at, delivered_at, applied_at")
# A second insert of the same (session, client_message_id) writes nothing and returns no
# row, also when it races the first: PostgreSQL waits for the first to commit, SQLite's
# writers queue for the write lock. The caller then reads the row that won.
INSERT_IF_NEW = text(
    "INSERT INTO session_inputs (session_id, client_message_id, content, state, created_by,"
    " created_at) VALUES (:session_id, :client_message_id, :content, 'queued', :created_by,"
    " :created_at)"
    f" ON CONFLICT (session_id, client_message_id) DO NOTHING RETURNING {COLUMNS}"
)
SELECT_BY_CLIENT_ID = text(
    f"SELECT {COLUMNS} FROM session_inputs"
    " WHERE session_id = :session_id AND client_message_id = :client_message_id"
)
# The runner's acknowledgement of an input's command: delivered (unless the agent's
# echo already made it applied), or failed with the runner's reason.
MARK_DELIVERED = text(
    "UPDATE session_inputs SET state = 'delivered', delivered_at = :now"
    " WHERE session_id = :session_id AND input_id = :input_id AND state = 'queued'"
)
MARK_FAILED = text(
    "UPDATE session_inputs SET state = 'failed', reason = :reason"
    " WHERE session_id = :session_id AND input_id = :input_id AND state IN ('queued', 'delivered')"
)
SELECT_PENDING = text(
    f"SELECT {COLUMNS} FROM session_inputs"
    " WHERE session_id = :session_id AND state IN ('queued', 'delivered', 'failed')"
    " ORDER BY input_id"
)

# The agent took these inputs (their echo came back): applied, whatever they were
# before, once; an input applied already keeps its first applied_at.
MARK_APPLIED = text(
    "UPDATE session_inputs SET state = 'applied', applied_at = :now"
    " WHERE session_id = :session_id AND input_id IN :input_ids AND state <> 'applied'"
).bindparams(bindparam("input_ids", expanding=True))


class InputRepository:
    """Queues and reads a session's inputs on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add_if_new(self, session_id, client_message_id, content, created_by, now):
        """Queue an input; None when the session already holds one of that client id."""
        row = self.conn.execute(INSERT_IF_NEW, {
            "session_id": session_id, "client_message_id": client_message_id,
            "content": content, "created_by": created_by, "created_at": now,
        }).mappings().first()
        return _to_input(row) if row is not None else None

    def find(self, session_id, client_message_id):
        """The session's input of that client id, or None."""
        row = self.conn.execute(SELECT_BY_CLIENT_ID, {
            "session_id": session_id, "client_message_id": client_message_id}).mappings().first()
        return _to_input(row) if row is not None else None

    def mark_delivered(self, session_id, input_id, now):
        """The runner wrote the input to the agent; nothing when it is past `queued`."""
        self.conn.execute(MARK_DELIVERED, {"session_id": session_id, "input_id": input_id,
                                           "now": now})

    def mark_failed(self, session_id, input_id, reason):
        """The runner could not deliver the input; nothing once it is applied."""
        self.conn.execute(MARK_FAILED, {"session_id": session_id, "input_id": input_id,
                                        "reason": reason})

    def list_pending(self, session_id):
        """The inputs not yet applied (queued, delivered or failed), oldest first."""
        rows = self.conn.execute(SELECT_PENDING, {"session_id": session_id}).mappings()
        return [_to_input(row) for row in rows]

    def mark_applied(self, session_id, input_ids, now):
        """Mark the session's inputs `input_ids` applied at `now` (those not applied
        yet); how many changed."""
        if not input_ids:
            return 0
        return self.conn.execute(MARK_APPLIED, {
            "session_id": session_id, "input_ids": list(input_ids), "now": now}).rowcount


def _to_input(row):
    return SessionInput(**{name: row[name] for name in COLUMNS.split(", ")})
