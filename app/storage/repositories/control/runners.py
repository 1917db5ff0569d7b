"""SQL for a session's runner presence (`agent_sessions.runner_controls`,
`runner_seen_at`, `stopped_by`, migration 0024): what the attached runner offers,
its last heartbeat, and who asked for the stop that ended the session."""
import json

from sqlalchemy import text

ATTACH = text(
    "UPDATE agent_sessions SET runner_controls = :controls, runner_seen_at = :now"
    " WHERE session_id = :session_id"
)
HEARTBEAT = text(
    "UPDATE agent_sessions SET runner_seen_at = :now WHERE session_id = :session_id"
)
SELECT_PRESENCE = text(
    "SELECT runner_controls, runner_seen_at, stopped_by FROM agent_sessions"
    " WHERE session_id = :session_id"
)


class RunnerRepository:
    """Records and reads the runner attached to a session, on one connection."""

    def __init__(self, conn):
        self.conn = conn

    def attach(self, session_id, controls, now):
        """Record what the runner offers (a list of control names) and that it is here."""
        self.conn.execute(ATTACH, {"session_id": session_id, "controls": json.dumps(list(controls)),
                                   "now": now})

    def heartbeat(self, session_id, now):
        """The runner is still here at `now`."""
        self.conn.execute(HEARTBEAT, {"session_id": session_id, "now": now})

    def presence(self, session_id):
        """(controls list or None when no runner ever attached, last heartbeat, stopped_by)."""
        row = self.conn.execute(SELECT_PRESENCE, {"session_id": session_id}).first()
        if row is None:
            return None, None, None
        controls = json.loads(row[0]) if row[0] is not None else None
        return controls, row[1], row[2]
