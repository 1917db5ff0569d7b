"""SQL for `agent_tokens` (bearer tokens, stored by their hash) and `viewer_sessions`
(viewer sign-ins, stored by the hash of their cookie's key)."""
import json

from sqlalchemy import text

from app.core.records import TokenRecord

COLUMNS = "id, kind, name, is_admin, created_at, revoked_at, allowed_users, expires_at, session_id"
# A token works while it is neither revoked nor expired.
ACTIVE = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > :now)"
INSERT = text(
    "INSERT INTO agent_tokens (kind, name, is_admin, token_hash, created_at, allowed_users,"
    " expires_at, session_id) VALUES (:kind, :name, :is_admin, :token_hash, :now,"
    " :allowed_users, :expires_at, :session_id) RETURNING id"
)
T_COLUMNS = ", ".join("t." + c.strip() for c in COLUMNS.split(","))
# A session's own write token works only while its parent does: the session is still
# assigned to the token's machine, and the runner token that opened the session
# (agent_sessions.opened_by_token) is neither revoked nor expired. A session opened
# without a token (or before migration 0016) has no parent to ask.
WORKING = (
    f"SELECT {T_COLUMNS} FROM agent_tokens t"
    " LEFT JOIN agent_sessions s ON s.session_id = t.session_id"
    " LEFT JOIN agent_tokens p ON p.id = s.opened_by_token"
    " WHERE {which} AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > :now)"
    " AND (t.session_id IS NULL OR (s.machine = t.name AND (s.opened_by_token IS NULL"
    " OR (p.revoked_at IS NULL AND (p.expires_at IS NULL OR p.expires_at > :now)))))"
)
SELECT_ACTIVE_BY_HASH = text(WORKING.format(which="t.token_hash = :token_hash"))
SELECT_ACTIVE_BY_ID = text(WORKING.format(which="t.id = :id"))

# Every token, a session's write token with the runner token that opened its session.
SELECT_ALL = text(
    f"SELECT {T_COLUMNS}, s.opened_by_token AS parent_id FROM agent_tokens t"
    " LEFT JOIN agent_sessions s ON s.session_id = t.session_id ORDER BY t.id"
)
REVOKE = text(
    "UPDATE agent_tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL"
)
# A no-op write: holds the token's row for the transaction (PostgreSQL; SQLite writers
# hold the database lock already), so a quota counted under it cannot be raced past.
LOCK = text("UPDATE agent_tokens SET id = id WHERE id = :id")
# A completed session's own write tokens expire `at` (unless they expire sooner).
# A running session's write token, renewed: it expires `at` now.
RENEW = text("UPDATE agent_tokens SET expires_at = :at WHERE id = :id AND revoked_at IS NULL")
EXPIRE_SESSION_TOKENS = text(
    "UPDATE agent_tokens SET expires_at = :at WHERE session_id = :session_id"
    " AND (expires_at IS NULL OR expires_at > :at)"
)

INSERT_VIEWER = text(
    "INSERT INTO viewer_sessions (key_hash, token_id, created_at, expires_at)"
    " VALUES (:key_hash, :token_id, :now, :expires_at)"
)
# The token behind a sign-in that is neither signed out nor expired, and still works.
SELECT_VIEWER = text(
    f"SELECT {T_COLUMNS}"
    " FROM viewer_sessions v JOIN agent_tokens t ON t.id = v.token_id"
    " WHERE v.key_hash = :key_hash AND v.revoked_at IS NULL AND v.expires_at > :now"
    " AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > :now)"
)
REVOKE_VIEWER = text(
    "UPDATE viewer_sessions SET revoked_at = :now WHERE key_hash = :key_hash AND revoked_at IS NULL"
)
DELETE_EXPIRED_VIEWERS = text("DELETE FROM viewer_sessions WHERE expires_at <= :now")


class TokenRepository:
    def __init__(self, conn):
        self.conn = conn

    def add(self, kind, name, is_admin, token_hash, now, *, allowed_users=None, expires_at=None,
            session_id=None):
        """Store a new token's hash; returns its id. `allowed_users` None: any user."""
        params = {"kind": kind, "name": name, "is_admin": int(is_admin),
                  "token_hash": token_hash, "now": now,
                  "allowed_users": None if allowed_users is None else json.dumps(list(allowed_users)),
                  "expires_at": expires_at, "session_id": session_id}
        return self.conn.execute(INSERT, params).scalar_one()

    def active_by_hash(self, token_hash, now):
        """The token with this hash that works at `now` (neither revoked nor expired, and
        a session's write token only while its parent works too), or None."""
        row = self.conn.execute(SELECT_ACTIVE_BY_HASH,
                                {"token_hash": token_hash, "now": now}).mappings().first()
        return _to_record(row) if row else None

    def active_by_id(self, token_id, now):
        """The token with this id that works at `now` (as `active_by_hash`), or None."""
        row = self.conn.execute(SELECT_ACTIVE_BY_ID, {"id": token_id, "now": now}).mappings().first()
        return _to_record(row) if row else None

    def list_all(self):
        return [_to_record(row) for row in self.conn.execute(SELECT_ALL).mappings()]

    def revoke(self, token_id, now):
        """Revoke the token; False when there is no such unrevoked token."""
        return self.conn.execute(REVOKE, {"id": token_id, "now": now}).rowcount == 1

    def lock(self, token_id):
        """Hold the token's row until the transaction ends."""
        self.conn.execute(LOCK, {"id": token_id})

    def renew(self, token_id, at):
        """The (unrevoked) token expires `at` from now on."""
        self.conn.execute(RENEW, {"id": token_id, "at": at})

    def expire_session_tokens(self, session_id, at):
        """The session's own write tokens stop working `at`."""
        self.conn.execute(EXPIRE_SESSION_TOKENS, {"session_id": session_id, "at": at})

    def add_viewer_session(self, key_hash, token_id, now, expires_at):
        self.conn.execute(INSERT_VIEWER, {"key_hash": key_hash, "token_id": token_id,
                                          "now": now, "expires_at": expires_at})

    def viewer_token(self, key_hash, now):
        """The working token behind a live sign-in, or None."""
        row = self.conn.execute(SELECT_VIEWER, {"key_hash": key_hash, "now": now}).mappings().first()
        return _to_record(row) if row else None

    def revoke_viewer_session(self, key_hash, now):
        """Sign out; False when the sign-in was unknown or already over."""
        return self.conn.execute(REVOKE_VIEWER, {"key_hash": key_hash, "now": now}).rowcount == 1

    def delete_expired_viewer_sessions(self, now):
        return self.conn.execute(DELETE_EXPIRED_VIEWERS, {"now": now}).rowcount


def _to_record(row):
    data = dict(row)
    data["is_admin"] = bool(data["is_admin"])
    users = data["allowed_users"]
    data["allowed_users"] = None if users is None else tuple(json.loads(users))
    return TokenRecord(**data)
