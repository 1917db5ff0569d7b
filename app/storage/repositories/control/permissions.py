"""SQL for `session_permissions`: the tool calls an agent asked a person to allow."""
import json

from sqlalchemy import text

from app.core.records import SessionPermission

COLUMNS = ("session_id, request_id, tool_name, tool_input, event_index, requested_at,"
           " expires_at, state, message, resolved_by, resolved_at")
# A request seen again (a re-sent batch, a replayed stream) writes nothing.
INSERT_IF_NEW = text(
    "INSERT INTO session_permissions (session_id, request_id, tool_name, tool_input,"
    " event_index, requested_at, expires_at, state) VALUES (:session_id, :request_id,"
    " :tool_name, :tool_input, :event_index, :requested_at, :expires_at, 'pending')"
    f" ON CONFLICT (session_id, request_id) DO NOTHING RETURNING {COLUMNS}"
)
SELECT_ONE = text(
    f"SELECT {COLUMNS} FROM session_permissions"
    " WHERE session_id = :session_id AND request_id = :request_id"
)
SELECT_PENDING = text(
    f"SELECT {COLUMNS} FROM session_permissions"
    " WHERE session_id = :session_id AND state = 'pending' ORDER BY requested_at, request_id"
)
# The first resolution wins: the WHERE makes a second one (or a race) change nothing.
RESOLVE_IF_PENDING = text(
    "UPDATE session_permissions SET state = :state, message = :message,"
    " resolved_by = :resolved_by, resolved_at = :resolved_at"
    " WHERE session_id = :session_id AND request_id = :request_id AND state = 'pending'"
)
SELECT_DUE_IN_SESSION = text(
    f"SELECT {COLUMNS} FROM session_permissions"
    " WHERE session_id = :session_id AND state = 'pending' AND expires_at IS NOT NULL"
    " AND expires_at <= :now ORDER BY expires_at, request_id"
)
SELECT_DUE = text(
    f"SELECT {COLUMNS} FROM session_permissions"
    " WHERE state = 'pending' AND expires_at IS NOT NULL AND expires_at <= :now"
    " ORDER BY expires_at LIMIT :limit"
)


class PermissionRepository:
    """Records, reads and resolves permission requests on one connection."""

    def __init__(self, conn):
        self.conn = conn

    def add_if_new(self, session_id, request_id, tool_name, tool_input, event_index,
                   requested_at, expires_at):
        """Record a pending request; None when the session holds one of that id already."""
        row = self.conn.execute(INSERT_IF_NEW, {
            "session_id": session_id, "request_id": request_id, "tool_name": tool_name,
            "tool_input": json.dumps(tool_input), "event_index": event_index,
            "requested_at": requested_at, "expires_at": expires_at,
        }).mappings().first()
        return _to_permission(row) if row is not None else None

    def find(self, session_id, request_id):
        """The session's request of that id, or None."""
        row = self.conn.execute(SELECT_ONE, {
            "session_id": session_id, "request_id": request_id}).mappings().first()
        return _to_permission(row) if row is not None else None

    def list_pending(self, session_id):
        """The session's requests still waiting for an answer, oldest first."""
        rows = self.conn.execute(SELECT_PENDING, {"session_id": session_id}).mappings()
        return [_to_permission(row) for row in rows]

    def resolve_if_pending(self, session_id, request_id, state, message, resolved_by, now):
        """Resolve a pending request as `state`; False when it was resolved before."""
        result = self.conn.execute(RESOLVE_IF_PENDING, {
            "session_id": session_id, "request_id": request_id, "state": state,
            "message": message, "resolved_by": resolved_by, "resolved_at": now})
        return result.rowcount == 1

    def due_in_session(self, session_id, now):
        """The session's pending requests whose time ran out at `now`, oldest first."""
        rows = self.conn.execute(SELECT_DUE_IN_SESSION, {"session_id": session_id, "now": now})
        return [_to_permission(row) for row in rows.mappings()]

    def due(self, now, limit=100):
        """Pending requests of any session whose time ran out at `now`, oldest first."""
        rows = self.conn.execute(SELECT_DUE, {"now": now, "limit": limit}).mappings()
        return [_to_permission(row) for row in rows]


def _to_permission(row):
    data = {name: row[name] for name in COLUMNS.split(", ")}
    data["tool_input"] = json.loads(data["tool_input"] or "{}")
    return SessionPermission(**data)
